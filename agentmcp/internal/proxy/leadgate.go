package proxy

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
)

// Claude Code 2.1.332 admits a line of its messaging socket through a gate
// for peer messages, and drops what the gate refuses, showing "Dropped a
// peer message from @NAME (NAME): sender exceeded the peer message rate
// limit." (or "identical to the previous message from this sender", or
// "this session has too many undelivered peer messages queued"). Read from
// its code (the gate's defaults, `bucketCapacity: 30, refillPerSecond: 0.5,
// dedupWindowMs: 30000`, `maxQueuedPeerMessages: 50`, tunable by its
// feature flag tengu_harbor_kite_limits) and measured with the real CLI
// (TestClaudeCodePeerGate; docs/claude-code-peer-gate.md):
//
//   - the sender is the line's from field ("from:codex1"; a line without
//     one counts as its process's);
//   - each sender has a bucket of gateBurst tokens, refilled at one per
//     gateRefill; a line when the bucket holds less than one is dropped
//     (rate-limited: of 40 lines written at once, 30 were taken);
//   - a line whose content equals the sender's last line taken, within
//     gateDuplicateWindow of it, is dropped (duplicate);
//   - a line while gateQueue peer messages wait in the session's queue is
//     dropped (queue-full); the queue empties into the model's next
//     request (interactive: the turn a message starts);
//   - nothing tells the writer: the connection ends as for a line taken,
//     and the "dropped" receipt goes only to a sender whose from is an
//     address of Claude Code's own (uds:…), which ours is not.
//
// So serve never writes a line the gate would drop: gate paces the lines
// for the lead under these numbers, minus a reserve for lines Claude Code
// reads later than they were written.
const (
	gateBurst           = 30
	gateRefill          = 2 * time.Second
	gateDuplicateWindow = 30 * time.Second
	gateQueue           = 50

	// gateReserve is the part of a sender's bucket serve never counts
	// on: Claude Code takes the tokens of a line when its busy event loop
	// reads it, which may be later than serve wrote it; 5 tokens cover 10 s
	// of such lag.
	gateReserve = 5
	// gateQueueReserve is the part of the queue serve never counts on:
	// Claude Code does not say when its queue empties, and serve's estimate
	// (queueEstimate) may be short; before it would count on more, serve
	// merges the messages of a batch into one line per sender, and then
	// waits.
	gateQueueReserve = 10
	// gateQueueDrain is how fast serve assumes lines leave Claude Code's
	// queue while the lead does not wait for a call of serve's
	// (queueEstimate): a line every 10 s. With gateQueueReserve that
	// covers a queue the model does not take for 100 s.
	gateQueueDrain = 10 * time.Second
	// gateReadLag is how late serve allows Claude Code to read a line
	// written to it (ccmsg's doc: it routed a line 300 ms after the writer
	// had closed the connection, its event loop busy with a turn): a line
	// is known to be in its queue only this long after it was written.
	gateReadLag = 2 * time.Second
	// gateDuplicateSlack widens the duplicate window for such lag, amply:
	// a repeat marked once too often costs nothing.
	gateDuplicateSlack = 10 * time.Second

	// gateMaxSenders bounds the senders gate remembers; a sender forgotten
	// with a full bucket and no recent line loses nothing.
	gateMaxSenders = 256
)

// againMark is appended to a message whose content would equal the
// sender's previous line within the duplicate window, so that Claude Code
// takes it (a person reads it as what it is).
const againMark = "\n\n(sent again)"

// gateConfig sets a gate's numbers; zero fields mean Claude Code's, less
// the reserves (defaultGate).
type gateConfig struct {
	burst  float64       // tokens of a sender serve counts on
	refill time.Duration // the wait for one token of a sender's bucket
	window time.Duration // a line equal to the sender's last within this is refused
	queue  float64       // lines serve counts on the queue to take at once
	drain  time.Duration // the assumed wait for a line to leave the queue
}

// defaultGate is Claude Code 2.1.332's gate less serve's reserves.
var defaultGate = gateConfig{
	burst:  gateBurst - gateReserve,
	refill: gateRefill,
	window: gateDuplicateWindow + gateDuplicateSlack,
	queue:  gateQueue - gateQueueReserve,
	drain:  gateQueueDrain,
}

// gate mirrors Claude Code's gate for the lines serve pushes into one
// session, so that every line is one it takes. It is safe for concurrent
// use; it does no I/O.
type gate struct {
	cfg gateConfig
	now func() time.Time

	mu      sync.Mutex // guards the fields below
	senders map[string]*gateSender
	queue   queueEstimate
}

// gateSender is what Claude Code keeps of one sender: its bucket and the
// content of its last line taken, and when.
type gateSender struct {
	bucket
	last   string
	lastAt time.Time
}

// newGate returns a gate with cfg's numbers (zero fields: defaultGate's)
// and the clock now (nil: time.Now).
func newGate(cfg gateConfig, now func() time.Time) *gate {
	if cfg.burst <= 0 {
		cfg.burst = defaultGate.burst
	}
	if cfg.refill <= 0 {
		cfg.refill = defaultGate.refill
	}
	if cfg.window <= 0 {
		cfg.window = defaultGate.window
	}
	if cfg.queue <= 0 {
		cfg.queue = defaultGate.queue
	}
	if cfg.drain <= 0 {
		cfg.drain = defaultGate.drain
	}
	if now == nil {
		now = time.Now
	}
	return &gate{cfg: cfg, now: now, senders: map[string]*gateSender{}}
}

// bucket is a token bucket that starts full: tokens at time at (the zero
// at: full). Tokens are taken at the time a line may go, which may be
// later than now; until then the bucket does not refill.
type bucket struct {
	tokens float64
	at     time.Time
}

// level returns the tokens at t, at most capacity.
func (b *bucket) level(t time.Time, capacity float64, refill time.Duration) float64 {
	if b.at.IsZero() {
		return capacity
	}
	d := max(t.Sub(b.at), 0)
	return min(capacity, b.tokens+float64(d)/float64(refill))
}

// readyAt returns the earliest time from t on at which the bucket holds n
// tokens (at most capacity).
func (b *bucket) readyAt(t time.Time, n, capacity float64, refill time.Duration) time.Time {
	n = min(n, capacity)
	if b.level(t, capacity, refill) >= n {
		return t
	}
	base := t
	if base.Before(b.at) {
		base = b.at
	}
	short := n - b.level(base, capacity, refill)
	return base.Add(time.Duration(short * float64(refill)))
}

// take takes n tokens at t.
func (b *bucket) take(t time.Time, n, capacity float64, refill time.Duration) {
	if t.Before(b.at) {
		t = b.at
	}
	b.tokens = b.level(t, capacity, refill) - n
	b.at = t
}

// queueEstimate is what serve knows of the lines waiting in Claude Code's
// queue of peer messages: the lines it pushed that the model may not have
// taken yet. The model takes the whole queue with its next request. While
// the lead waits for one of serve's tools (calls > 0) it makes none, so
// nothing leaves; otherwise serve assumes a line leaves every
// gateConfig.drain (a model that works on without serve's tools makes a
// request every few seconds, and a message to an idle lead starts a turn
// at once; a long tool call of another kind, a Bash command or a
// subagent, keeps the queue as serve's do). A call of the lead that
// arrives after serve answered one is the proof of a request made since:
// the lines pushed before that answer (by gateReadLag at least, so that
// Claude Code had read them) have left.
type queueEstimate struct {
	lines    []queuedLines // oldest first
	calls    int           // the lead's tool calls serve is answering
	decayAt  time.Time     // the assumed outflow is counted up to here
	answered time.Time     // serve's last answer to the lead
}

// queuedLines are n lines pushed at at.
type queuedLines struct {
	at time.Time
	n  float64
}

// settle counts the assumed outflow, a line every drain, up to now; g.mu
// is held.
func (q *queueEstimate) settle(now time.Time, drain time.Duration) {
	if q.calls == 0 && !q.decayAt.IsZero() && now.After(q.decayAt) {
		out := float64(now.Sub(q.decayAt)) / float64(drain)
		for len(q.lines) > 0 && out > 0 && !q.lines[0].at.After(now) {
			d := min(out, q.lines[0].n)
			q.lines[0].n -= d
			out -= d
			if q.lines[0].n <= 0 {
				q.lines = q.lines[1:]
			}
		}
	}
	q.decayAt = now
}

// waiting returns the lines that may wait.
func (q *queueEstimate) waiting() float64 {
	w := 0.0
	for _, l := range q.lines {
		w += l.n
	}
	return w
}

// fits reports whether n more lines fit (queue lines at most). Room is not
// waited for: it may come sooner than assumed (a call of the lead's), and
// the mail that waits for it is offered again at the next check.
func (q *queueEstimate) fits(n, queue float64) bool {
	return q.waiting()+min(n, queue) <= queue
}

// callStarted is told when the lead calls one of serve's tools: the lines
// pushed before serve's last answer have left the queue, and none leaves
// while the call lasts. It reports whether that made room.
func (g *gate) callStarted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := &g.queue
	q.settle(g.now(), g.cfg.drain)
	i := 0
	if !q.answered.IsZero() {
		for i < len(q.lines) && q.lines[i].at.Before(q.answered.Add(-gateReadLag)) {
			i++
		}
		q.lines = q.lines[i:]
	}
	q.calls++
	return i > 0
}

// callEnded is told when serve has answered a call of the lead's.
func (g *gate) callEnded() {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := &g.queue
	now := g.now()
	q.settle(now, g.cfg.drain)
	q.calls = max(q.calls-1, 0)
	q.answered = now
}

// pushPart is one message for the lead as gate paces it.
type pushPart struct {
	key   string // the line's from field: Claude Code's sender
	from  string // the sender the envelope names
	body  string // the message as the lead reads it
	msgID string // optional
}

// pace returns the lines that carry parts and the time at which they may
// be written, in one go, in their order; it reserves their tokens. Each
// part gets a line of its own when its sender's bucket and the queue hold
// a token for each; otherwise a sender's parts go together into one line
// (mergeBodies), and the lines wait for the tokens they need. A line whose
// content Claude Code would take for a duplicate carries againMark. When
// the lines could not go within limit, or do not fit into the queue's
// room even merged, pace reserves nothing and returns ok false.
func (g *gate) pace(parts []pushPart, limit time.Duration) (lines []ccmsg.Message, at time.Time, ok bool) {
	if len(parts) == 0 {
		return nil, time.Time{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	c := g.cfg
	g.prune(now)

	// The senders in order of first appearance, with how many parts and
	// how many envelope senders each has.
	type group struct {
		s      *gateSender
		parts  int
		froms  map[string]bool
		merged bool
	}
	var order []string
	groups := map[string]*group{}
	for _, pt := range parts {
		gr := groups[pt.key]
		if gr == nil {
			gr = &group{s: g.sender(pt.key), froms: map[string]bool{}}
			groups[pt.key] = gr
			order = append(order, pt.key)
		}
		gr.parts++
		gr.froms[pt.from] = true
	}
	linesOf := func(gr *group) int {
		if gr.merged {
			return len(gr.froms)
		}
		return gr.parts
	}
	total := 0
	for _, k := range order {
		gr := groups[k]
		gr.merged = gr.s.level(now, c.burst, c.refill) < float64(gr.parts)
		total += linesOf(gr)
	}
	g.queue.settle(now, c.drain)
	if g.queue.waiting()+float64(total) > c.queue {
		total = 0
		for _, k := range order {
			gr := groups[k]
			gr.merged = gr.merged || gr.parts > len(gr.froms)
			total += linesOf(gr)
		}
	}
	if !g.queue.fits(float64(total), c.queue) {
		return nil, time.Time{}, false
	}
	at = now
	for _, k := range order {
		gr := groups[k]
		if t := gr.s.readyAt(now, float64(linesOf(gr)), c.burst, c.refill); t.After(at) {
			at = t
		}
	}
	if at.Sub(now) > limit {
		return nil, time.Time{}, false
	}
	g.queue.lines = append(g.queue.lines, queuedLines{at: at, n: float64(total)})
	for _, k := range order {
		gr := groups[k]
		gr.s.take(at, float64(linesOf(gr)), c.burst, c.refill)
	}

	// The lines, in the order of their first part.
	done := map[string]bool{} // key+"\x00"+from of a merged line written
	for i, pt := range parts {
		gr := groups[pt.key]
		line := ccmsg.Message{From: pt.key, MsgID: pt.msgID}
		body := pt.body
		if gr.merged {
			mk := pt.key + "\x00" + pt.from
			if done[mk] {
				continue
			}
			done[mk] = true
			var bodies []string
			for _, q := range parts[i:] {
				if q.key == pt.key && q.from == pt.from {
					bodies = append(bodies, q.body)
				}
			}
			body = mergeBodies(bodies)
		}
		line.Content = ccmsg.Envelope(pt.from, pt.from, body)
		for gr.s.last == line.Content && at.Sub(gr.s.lastAt) < c.window {
			body += againMark
			line.Content = ccmsg.Envelope(pt.from, pt.from, body)
		}
		gr.s.last, gr.s.lastAt = line.Content, at
		lines = append(lines, line)
	}
	return lines, at, true
}

// sender returns key's state, making it; g.mu is held.
func (g *gate) sender(key string) *gateSender {
	s := g.senders[key]
	if s == nil {
		s = &gateSender{}
		g.senders[key] = s
	}
	return s
}

// prune forgets, past gateMaxSenders, the senders whose bucket is full at
// now and whose last line is out of the duplicate window: Claude Code
// would take their next line as a first one. g.mu is held.
func (g *gate) prune(now time.Time) {
	if len(g.senders) < gateMaxSenders {
		return
	}
	for k, s := range g.senders {
		if s.level(now, g.cfg.burst, g.cfg.refill) >= g.cfg.burst && now.Sub(s.lastAt) >= g.cfg.window {
			delete(g.senders, k)
		}
	}
}

// mergeBodies is the body of one line that carries several messages of
// one sender: each numbered, "(1/3) …", a blank line between them. Claude
// Code's terminal shows the first line of the first; its model reads all.
func mergeBodies(bodies []string) string {
	if len(bodies) == 1 {
		return bodies[0]
	}
	var b strings.Builder
	n := strconv.Itoa(len(bodies))
	for i, body := range bodies {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("(" + strconv.Itoa(i+1) + "/" + n + ") " + body)
	}
	return b.String()
}
