package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/mailbridge"
)

// Paths mail for the lead can take (tools.LeadMail.Path).
const (
	leadPathSocket = "socket"
	leadPathInbox  = "inbox"
)

// pushTimeout bounds one push to the messaging socket.
const pushTimeout = 2 * time.Second

// Retries after a refused push back off from minRetry, doubling up to
// maxRetry, so a socket that refuses costs a connection attempt every few
// seconds, not one per mail check (mail_poll_interval_ms may be 50 ms).
const (
	minRetry = time.Second
	maxRetry = 30 * time.Second
)

// maxPace bounds the wait of a batch of the lead's mail for the tokens of
// Claude Code's gate (gate.pace); a batch that would wait longer stays
// unread for a later check. Merged lines keep the wait to a token or two
// (gateRefill each), far below this.
const maxPace = 20 * time.Second

// flushTimeout bounds the wait of a turn's result for the lead's mail
// (flush).
const flushTimeout = 500 * time.Millisecond

// leadPush pushes the mail addressed to the client's own identity (the
// lead: serve's --identity, or team-lead in a Claude Code session team)
// into the Claude Code session through its messaging socket
// (mailbridge.MessageTarget, bound with Bridge.BindTarget). The inbox
// stays the durable record: a batch the socket took is marked read by the
// bridge (done(true)), and Claude Code's own reader then drops it without
// showing it again; a batch it refused stays unread and is offered again
// at the next check.
//
// Claude Code drops, without a word to the writer, the lines its gate for
// peer messages refuses (leadgate.go); a dropped line's mail would be
// marked read and never seen. So every line goes through gate: paced
// under the gate's rate per sender and the room of its queue, several
// messages of a sender merged into one line when its tokens are short,
// and a repeated text marked as sent again.
//
// While a Codex session holds the lead's identity, that session gets its
// mail as today (suspend), and the push resumes when it ends.
type leadPush struct {
	identity string
	team     string
	atm      *atmclient.Client // counts the lead's unread mail (flush)
	client   *ccmsg.Client     // nil: no push (why says so)
	gate     *gate             // paces the lines under Claude Code's gate
	why      string            // why mail stays in the inbox; "" when client is set
	log      *slog.Logger
	now      func() time.Time
	pushes   *owned // the pushes under way, joined by close

	mu        sync.Mutex // guards the fields below; never held across I/O
	bridge    *mailbridge.Bridge
	bound     bool // bound to the bridge with BindTarget
	held      bool // a Codex session holds identity (suspend)
	pushed    int
	batches   int
	failures  int
	lastPush  time.Time
	lastError string
	failing   bool          // the last push failed: further failures go to debug
	backoff   time.Duration // the wait after the last failure (0 while pushes succeed)
	reader    string        // a teammate of Claude Code's own, seen at the last offer: its lead reads the inbox itself
	retryAt   time.Time     // no push before this while failing
	// changed is closed, and replaced, whenever a push settles or a batch
	// of the lead's mail is marked read: what flush waits for.
	changed chan struct{}
}

// newLeadPush decides the path of the lead's mail from the options: the
// socket when Claude Code offers one and lead_push is on and the identity
// is the client's alone; otherwise the inbox, with the reason.
func newLeadPush(opts Options, atm *atmclient.Client, log *slog.Logger) *leadPush {
	p := &leadPush{identity: opts.Identity, team: opts.Team, atm: atm, log: log.With("lead", opts.Identity), now: opts.Now,
		gate: newGate(gateConfig{}, opts.Now), pushes: newOwned(), changed: make(chan struct{})}
	switch {
	case !opts.LeadPush:
		p.why = "lead_push is off"
	case opts.MessagingSocket == "":
		p.why = "no messaging socket: serve was not started by a Claude Code session that offers one (CLAUDE_CODE_MESSAGING_SOCKET)"
	case opts.Identity == opts.DefaultIdentity:
		p.why = fmt.Sprintf("%s is also default_identity, the identity of agents started without one, so its mail is theirs (set default_identity or identity to another name)", opts.Identity)
	default:
		// No linger: Claude Code 2.1.332 reads a connection's lines after
		// the writer has closed it (measured: it routed a line 300 ms after
		// our close), and flush waits for the mark that follows Send.
		c, err := ccmsg.New(ccmsg.Config{Socket: opts.MessagingSocket, Token: opts.MessagingToken, Timeout: pushTimeout, Linger: -1})
		if err != nil {
			p.why = err.Error()
			break
		}
		p.client = c
	}
	return p
}

// start binds the lead's identity to the bridge when the push is on and no
// Codex session holds it.
func (p *leadPush) start(b *mailbridge.Bridge) {
	if p.client == nil {
		return
	}
	p.mu.Lock()
	p.bridge = b
	held := p.held // a session resumed at start holds it
	p.mu.Unlock()
	if !held {
		p.resume()
	}
}

// suspend gives the lead's identity up for a Codex session that binds it.
func (p *leadPush) suspend() {
	p.mu.Lock()
	p.held = true
	b, bound := p.bridge, p.bound
	p.bound = false
	p.mu.Unlock()
	if bound {
		b.Unbind(p.identity)
	}
}

// resume binds the lead's identity again once no Codex session holds it.
func (p *leadPush) resume() {
	p.mu.Lock()
	p.held = false
	b := p.bridge
	if b == nil || p.bound {
		p.mu.Unlock()
		return
	}
	p.bound = true
	p.mu.Unlock()
	if err := b.BindTarget(p.identity, p); err != nil {
		p.mu.Lock()
		p.bound = false
		p.mu.Unlock()
		p.log.Warn("mail for the lead stays in the inbox: cannot watch it", "err", err)
	}
}

// DeliverMessages pushes msgs to the session on a goroutine of its own (it
// must not block the bridge; close joins it), in the lines gate.pace makes
// of them and once they may go, and reports the outcome through done. It
// returns false, and the mail waits for a later check, when the gate's
// tokens are too far off (maxPace) or Claude Code's queue has no room.
// Once close has begun it pushes nothing.
func (p *leadPush) DeliverMessages(identity string, msgs []atmclient.Message, done func(sent bool)) bool {
	if identity != p.identity || p.client == nil || len(msgs) == 0 {
		return false
	}
	p.mu.Lock()
	wait := p.failing && p.now().Before(p.retryAt)
	p.mu.Unlock()
	if wait {
		return false // backing off: a later check offers the mail again
	}
	if mate := p.claudeReads(); mate != "" {
		// Claude Code's lead reads this inbox itself (it consumes what it
		// shows): a push as well would show the mail twice.
		p.mu.Lock()
		p.reader = mate
		p.signalLocked()
		p.mu.Unlock()
		return false
	}
	p.mu.Lock()
	p.reader = ""
	p.mu.Unlock()
	parts := make([]pushPart, len(msgs))
	for i, m := range msgs {
		from := sender(p.team, m)
		parts[i] = pushPart{key: m.From, from: from, body: leadBody(m), msgID: m.ID()}
	}
	lines, at, ok := p.gate.pace(parts, maxPace)
	if !ok {
		p.log.Debug("mail for the lead waits: Claude Code's gate has no room for it yet", "messages", len(msgs))
		return false
	}
	if wait := at.Sub(p.now()); wait > 0 || len(lines) < len(msgs) {
		p.log.Debug("mail for the lead paced under Claude Code's gate", "messages", len(msgs), "lines", len(lines), "wait", wait)
	}
	return p.pushes.Go(func(ctx context.Context) {
		err := p.sendAt(ctx, at, lines)
		p.settle(len(msgs), err)
		done(err == nil)
	})
}

// sendAt writes lines once at has come (gate.pace's time), within
// pushTimeout after it; ctx ends the wait.
func (p *leadPush) sendAt(ctx context.Context, at time.Time, lines []ccmsg.Message) error {
	if wait := at.Sub(p.now()); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for Claude Code's gate: %w", ctx.Err())
		case <-t.C:
		}
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	return p.client.Send(ctx, lines...)
}

// callStarted and callEnded are told of each tool call of the lead's
// (handler.CallTool): Claude Code's queue keeps the lines pushed while its
// model waits for the call, and a call after an answer shows that the
// model took the queue (gate's queueEstimate). Once that makes room, the
// mail that waited for it is offered again.
func (p *leadPush) callStarted() {
	if p.client != nil && p.gate.callStarted() {
		p.kick()
	}
}

func (p *leadPush) callEnded() {
	if p.client != nil {
		p.gate.callEnded()
	}
}

// kick has the bridge check the lead's inbox.
func (p *leadPush) kick() {
	p.mu.Lock()
	b, bound := p.bridge, p.bound
	p.mu.Unlock()
	if bound {
		b.Idle(p.identity)
	}
}

// close refuses further pushes (their mail stays unread, for the next
// serve) and waits for those under way, so that the bridge, closed after
// it, marks what they pushed.
func (p *leadPush) close() {
	if !p.pushes.stop(pushTimeout) {
		p.log.Warn("a push to the session was cut short at shutdown; its mail stays unread")
	}
}

// signalLocked wakes the flushes waiting for a push or a mark; p.mu is
// held.
func (p *leadPush) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// marked is the bridge's report of a batch marked read (OnBatch): a batch
// of the lead's mail wakes the flushes.
func (p *leadPush) marked(b mailbridge.Batch) {
	if !b.Raw || b.Identity != p.identity {
		return
	}
	p.mu.Lock()
	p.signalLocked()
	p.mu.Unlock()
}

// flush waits, at most flushTimeout, until the mail for the lead that is
// in its inbox now has been pushed and marked read. The proxy calls it
// before it answers a call that may end a turn (tools.EndsTurn): mail an
// agent sent to the lead during its turn then reaches Claude Code's queue
// before the turn's result does, and the model's next request carries
// both. It returns at once when the push is off, failing or left to
// Claude Code's own reader, or there is no unread mail for the lead.
//
// It never polls: it reads the inbox, and reads it again each time a push
// settles or a batch of the lead's mail is marked read (changed). release
// (optional) is called before anything that may wait, the first read
// included: the caller's reading of its client goes on meanwhile.
func (p *leadPush) flush(ctx context.Context, release func()) {
	p.mu.Lock()
	b, ok := p.bridge, p.client != nil && p.bound && !p.failing && p.reader == "" && p.atm != nil
	p.mu.Unlock()
	if !ok {
		return
	}
	if release != nil {
		release()
	}
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	kicked := false
	for {
		// The signal is taken before the read: a push or a mark after the
		// read closes it.
		p.mu.Lock()
		changed, gone := p.changed, p.failing || p.reader != "" || !p.bound
		p.mu.Unlock()
		if gone {
			return
		}
		n, err := p.atm.Pending(ctx, p.team, p.identity)
		if err != nil || n == 0 {
			return
		}
		if !kicked {
			b.Idle(p.identity) // the watch's event may still be on its way
			kicked = true
		}
		select {
		case <-ctx.Done():
			p.log.Debug("a turn's result goes before the lead's mail: the push is still on its way", "pending", n)
			return
		case <-changed:
		}
	}
}

// settle records a push's outcome; a failure is said once at warn level
// until a push succeeds again.
func (p *leadPush) settle(n int, err error) {
	p.mu.Lock()
	failing := p.failing
	if err != nil {
		p.failures++
		p.lastError = err.Error()
		p.failing = true
		p.backoff = min(max(2*p.backoff, minRetry), maxRetry)
		p.retryAt = p.now().Add(p.backoff)
	} else {
		p.pushed += n
		p.batches++
		p.lastPush = p.now()
		p.lastError = ""
		p.failing = false
		p.backoff = 0
	}
	p.signalLocked()
	p.mu.Unlock()
	switch {
	case err == nil && failing:
		p.log.Info("mail for the lead reaches the session again", "messages", n)
	case err == nil:
		p.log.Debug("mail for the lead pushed to the session", "messages", n)
	case failing:
		p.log.Debug("mail for the lead not pushed (again); it stays unread in the inbox", "err", err)
	default:
		p.log.Warn("mail for the lead not pushed; it stays unread in the inbox and is tried again", "err", err)
	}
}

// leadText is what Claude Code gets for one message: its text in a
// cross-session envelope from its sender (ccmsg.Envelope), the sender
// with its team when it is another, and the summary in front when it says
// more than the text's start (the atm CLI's automatic one does not).
// Claude Code's terminal shows it as a teammate's message, "Message from
// @codex1: (tests) all pass", and its model reads the sender in the
// envelope (Claude Code does not show the line's from field to it).
func leadText(team string, m atmclient.Message) string {
	from := sender(team, m)
	return ccmsg.Envelope(from, from, leadBody(m))
}

// leadBody is the body of leadText's envelope: the text, with the summary
// in front when it says more than the text's start.
func leadBody(m atmclient.Message) string {
	if s := strings.TrimSpace(m.Summary); s != "" && !strings.HasPrefix(strings.TrimSpace(m.Text), strings.TrimSuffix(s, "...")) {
		return "(" + s + ") " + m.Text
	}
	return m.Text
}

// sender is m's sender as the lead names it: with its team when that is
// another.
func sender(team string, m atmclient.Message) string {
	if m.SourceTeam != "" && m.SourceTeam != team && !strings.Contains(m.From, "@") {
		return m.From + "@" + m.SourceTeam
	}
	return m.From
}

// pushIdle pushes a teammate's idle notification for the lead to the
// session as text a person reads (idleText), in the sender's envelope,
// after the lead's mail that is unread now (flush: the agent's mail of
// the turn goes first). It returns false, and pushes nothing, when the
// push is off, suspended or backing off, or when Claude Code's lead reads
// its inbox itself: there the frame belongs in the inbox, where Claude
// Code shows it as "Teammate @codex1 finished"; a line on the socket
// cannot pass as that (Claude Code escapes its <teammate-message> tags).
// It also returns false when the push fails, or when Claude Code's gate
// (gate.pace) has no room for the line within pushTimeout; it waits for
// that room first.
func (p *leadPush) pushIdle(ctx context.Context, n atmclient.IdleNotification) bool {
	if p.client == nil {
		return false
	}
	p.mu.Lock()
	ok := p.bound && !p.held && !(p.failing && p.now().Before(p.retryAt))
	p.mu.Unlock()
	if !ok || p.claudeReads() != "" {
		return false
	}
	p.flush(ctx, nil)
	lines, at, ok := p.gate.pace([]pushPart{{key: n.From, from: n.From, body: idleText(n)}}, pushTimeout)
	if !ok {
		p.log.Debug("an idle notification goes to the inbox: Claude Code's gate has no room for it yet", "from", n.From)
		return false
	}
	err := p.sendAt(ctx, at, lines)
	p.settle(1, err)
	return err == nil
}

// idleText says how a teammate's turn ended, for a person: "Finished its
// turn: <summary>", "Its turn was interrupted" or "Its turn failed:
// <reason>" on the first line (the one Claude Code's terminal shows), then
// the turn's result when it says more, at most atmclient.MaxIdleResult
// characters.
func idleText(n atmclient.IdleNotification) string {
	result := strings.TrimSpace(n.Result)
	var head, detail string
	switch n.IdleReason {
	case atmclient.IdleInterrupted:
		head = "Its turn was interrupted"
	case atmclient.IdleFailed:
		head, detail = "Its turn failed", atmclient.Summarize(firstLine(result))
	default:
		head = "Finished its turn"
		if result != "" {
			detail = n.Summary
		}
	}
	if detail != "" {
		head += ": " + detail
	}
	if result == "" || result == detail {
		return head
	}
	if r := []rune(result); len(r) > atmclient.MaxIdleResult {
		result = string(r[:atmclient.MaxIdleResult]) + "…"
	}
	return head + "\n\n" + result
}

// status is the lead's mail path for agent_status.
func (p *leadPush) status(stats func(string) mailbridge.Stats) tools.LeadMail {
	st := p.counts()
	if st.Path == leadPathSocket && stats != nil {
		st.Pending = stats(p.identity).Pending // outside p.mu: the bridge takes its own lock
	}
	return st
}

// counts is status without the bridge's pending count.
func (p *leadPush) counts() tools.LeadMail {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := tools.LeadMail{Identity: p.identity, Path: leadPathInbox, Reason: p.why,
		Pushed: p.pushed, Batches: p.batches, Failures: p.failures, LastError: p.lastError}
	if !p.lastPush.IsZero() {
		t := p.lastPush.UTC()
		st.LastPush = &t
	}
	switch {
	case p.client == nil:
	case p.held:
		st.Reason = "a Codex session holds " + p.identity + ": its mail goes to that session"
	case !p.bound:
		st.Reason = "the inbox is not watched yet"
	case p.reader != "":
		st.Reason = fmt.Sprintf("Claude Code's lead reads its inbox itself now (its own teammate %s is in the team): the mail is left to it", p.reader)
	default:
		st.Path, st.Socket = leadPathSocket, p.client.Socket()
		if p.failing {
			st.Reason = "the last push failed; mail stays unread in the inbox until a push succeeds"
		}
	}
	return st
}

// claudeReads returns the name of a teammate Claude Code itself runs in
// the lead's team (a member it added: one with a tmuxPaneId, the lead
// aside), or "". Once a Claude Code lead has spawned a teammate of its own
// it reads the lead's inbox every second and shows what it finds (measured
// with Claude Code 2.1.332); pushing the same mail as well would show it twice,
// so the mail is left to that reader. The members this proxy adds carry no
// tmuxPaneId.
func (p *leadPush) claudeReads() string {
	if p.atm == nil {
		return ""
	}
	t, err := p.atm.TeamConfig(p.team)
	if err != nil {
		return ""
	}
	for _, m := range t.Members {
		if m.Name == p.identity || m.AgentType == "team-lead" || ours(m) {
			continue
		}
		if _, ok := m.Extra["tmuxPaneId"]; ok {
			return m.Name
		}
	}
	return ""
}

// leadMail is agent_status's lead_mail.
func (s *Server) leadMail() tools.LeadMail {
	var stats func(string) mailbridge.Stats
	if b := s.mail.bridge(); b != nil {
		stats = b.Stats
	}
	return s.lead.status(stats)
}
