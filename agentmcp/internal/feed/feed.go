package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// Sessions are the serve's sessions as the feed reads them
// (*session.Manager).
type Sessions interface {
	// Sessions returns every session the serve knows.
	Sessions() []*session.Session
	// Get returns the session of an agent_id, or nil.
	Get(agentID string) *session.Session
}

// Config configures a Feed.
type Config struct {
	// Serve describes the serve (its instance, team, pid, start).
	// required: Instance and Team.
	Serve Serve
	// Dir is the serve's registry instance directory, where the feed's
	// record (feed.json) is written. required.
	Dir string
	// SocketDir is where the socket's own directory is made. optional: ""
	// means os.TempDir().
	SocketDir string
	// ATM reads the team's inboxes for the mail timeline and unread
	// counts. optional: nil publishes no mail.
	ATM *atmclient.Client
	// MailTeam is the ATM team whose inboxes are read. optional: ""
	// means Serve.Team.
	MailTeam string
	// MailPoll is how often the inboxes are looked at. optional: 0 means
	// 300 ms.
	MailPoll time.Duration
	// Coalesce is the shortest time between two states of one agent: the
	// events of a burst become one state. optional: 0 means 25 ms.
	Coalesce time.Duration
	// ClientQueue is how many frames wait for a client before it is
	// dropped as too slow. optional: 0 means 4096.
	ClientQueue int
	// MailRing is how much recent mail a snapshot carries. optional: 0
	// means 500.
	MailRing int
	// Diffs read isolated agents' changes (diff.go). optional: nil
	// publishes their worktrees without a stat, and a view's diff request
	// is refused.
	Diffs Diffs
	// Logger receives the logs. optional: nil discards.
	Logger *slog.Logger
	// Now returns the current time. optional: nil means time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.SocketDir == "" {
		c.SocketDir = os.TempDir()
	}
	if c.MailTeam == "" {
		c.MailTeam = c.Serve.Team
	}
	if c.MailPoll <= 0 {
		c.MailPoll = 300 * time.Millisecond
	}
	if c.Coalesce <= 0 {
		c.Coalesce = 25 * time.Millisecond
	}
	if c.ClientQueue <= 0 {
		c.ClientQueue = 4096
	}
	if c.MailRing <= 0 {
		c.MailRing = 500
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Feed publishes a serve's sessions on a Unix socket. Make it with New,
// give it to the session Manager as its Observer, then Start it with the
// Manager; Close ends it.
type Feed struct {
	cfg Config
	log *slog.Logger

	sessions Sessions
	ln       net.Listener
	sockDir  string
	record   string
	wake     chan struct{}
	stop     chan struct{}
	pubDone  chan struct{} // closed when the publisher returned
	// pubMu makes publishes one at a time, so that a later state is never
	// overwritten by an earlier one read before it.
	pubMu sync.Mutex
	wg    sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	dirty   map[*session.Session]bool
	agents  map[string]*published // by agent_id
	mail    []Mail
	unread  map[string]int // unread mail by identity (the inboxes)
	clients map[*client]bool
	started bool
	closed  bool
	// stats are the isolated agents' diff stats as last read, statAsked
	// when each was last asked for, statQueue the sessions to read
	// (diff.go).
	stats     map[string]DiffStat
	statAsked map[string]statWant
	statQueue map[*session.Session]bool
	statWake  chan struct{} // 1-buffered
}

// published is an agent as last published, with what its next state is
// derived from.
type published struct {
	agent Agent
	json  []byte
}

// New returns a Feed; it publishes nothing before Start.
func New(cfg Config) (*Feed, error) {
	if cfg.Serve.Instance == "" || cfg.Serve.Team == "" || cfg.Dir == "" {
		return nil, errors.New("feed: Serve.Instance, Serve.Team and Dir are required")
	}
	cfg.setDefaults()
	return &Feed{cfg: cfg, log: cfg.Logger.With("component", "feed"), wake: make(chan struct{}, 1), stop: make(chan struct{}), pubDone: make(chan struct{}),
		dirty: map[*session.Session]bool{}, agents: map[string]*published{}, unread: map[string]int{}, clients: map[*client]bool{},
		stats: map[string]DiffStat{}, statAsked: map[string]statWant{}, statQueue: map[*session.Session]bool{}, statWake: make(chan struct{}, 1)}, nil
}

// SessionChanged marks s for the next state (session.Observer); it never
// blocks.
func (f *Feed) SessionChanged(s *session.Session) {
	f.mu.Lock()
	f.dirty[s] = true
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Start listens on the socket, writes the feed's record into the
// instance directory and starts publishing the sessions' states.
func (f *Feed) Start(sessions Sessions) error {
	f.sessions = sessions
	dir, err := os.MkdirTemp(f.cfg.SocketDir, "atm-feed-")
	if err != nil {
		return fmt.Errorf("feed: socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("feed: socket directory: %w", err)
	}
	sock := filepath.Join(dir, "feed.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("feed: listen: %w", err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return fmt.Errorf("feed: socket: %w", err)
	}
	f.ln, f.sockDir = ln, dir
	rec, err := writeRecord(f.cfg.Dir, Record{Socket: sock, Serve: f.cfg.Serve})
	if err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return err
	}
	f.record = rec
	live := sessions.Sessions()
	f.mu.Lock()
	for _, s := range live {
		if s.Record().Status.Live() {
			f.dirty[s] = true
		}
	}
	f.started = true
	f.mu.Unlock()
	f.publish() // the live sessions are in the first snapshot
	f.wg.Add(2)
	go f.publisher()
	go f.statLoop()
	go f.accept()
	if f.cfg.ATM != nil {
		f.wg.Add(1)
		go f.pollMail()
	}
	f.log.Info("feed published", "socket", sock, "record", rec)
	return nil
}

// Close stops publishing: the record is removed, the socket closed (every
// client sees its stream end) and the goroutines ended.
func (f *Feed) Close() error {
	f.mu.Lock()
	if f.closed || !f.started {
		f.closed = true
		f.mu.Unlock()
		return nil
	}
	f.started = false // a second Close does nothing
	f.mu.Unlock()
	removeRecord(f.record)
	close(f.stop)
	err := f.ln.Close()
	<-f.pubDone
	f.publish() // the last states (closed sessions) go out before the end
	f.mu.Lock()
	f.closed = true
	clients := make([]*client, 0, len(f.clients))
	for c := range f.clients {
		clients = append(clients, c)
	}
	f.mu.Unlock()
	for _, c := range clients {
		c.end()
	}
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second): // a client that does not read
		for _, c := range clients {
			c.close()
		}
		<-done
	}
	os.RemoveAll(f.sockDir)
	return err
}

// publisher publishes the dirty sessions' states, at most every
// Coalesce.
func (f *Feed) publisher() {
	defer close(f.pubDone)
	for {
		select {
		case <-f.stop:
			return
		case <-f.wake:
		}
		f.publish()
		select {
		case <-f.stop:
			return
		case <-time.After(f.cfg.Coalesce):
		}
	}
}

// publish reads the dirty sessions' states and sends those that changed.
func (f *Feed) publish() {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	f.mu.Lock()
	dirty := make([]*session.Session, 0, len(f.dirty))
	for s := range f.dirty {
		dirty = append(dirty, s)
	}
	clear(f.dirty)
	f.mu.Unlock()
	now := f.cfg.Now()
	for _, s := range dirty {
		st := s.State(20)
		f.mu.Lock()
		prev := f.agents[st.Record.AgentID]
		a := agentOf(st, prev, f.unread[st.Record.Identity], now)
		a.Worktree = f.worktreeOfLocked(st.Record)
		f.wantStatLocked(s, st)
		f.mu.Unlock()
		f.put(a)
	}
}

// put publishes a when it differs from what was published.
func (f *Feed) put(a Agent) {
	b, err := json.Marshal(a)
	if err != nil {
		f.log.Warn("cannot encode an agent's state", "agent_id", a.AgentID, "err", err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.agents[a.AgentID]; p != nil && string(p.json) == string(b) {
		return
	}
	f.agents[a.AgentID] = &published{agent: a, json: b}
	f.broadcastLocked(Frame{Type: "agent", Agent: &a})
}

// snapshotLocked is the frame a new client starts from; f.mu is held.
func (f *Feed) snapshotLocked() Frame {
	fr := Frame{Type: "snapshot", Agents: []Agent{}, MailList: append([]Mail{}, f.mail...)}
	for _, p := range f.agents {
		fr.Agents = append(fr.Agents, p.agent)
	}
	sort.Slice(fr.Agents, func(i, j int) bool { return fr.Agents[i].Identity < fr.Agents[j].Identity })
	return fr
}

// maxSpans is how many turns an agent's timeline keeps.
const maxSpans = 50

// agentOf is a session's state as the feed publishes it; prev is what was
// published before (nil for none), unread the inbox's unread count.
func agentOf(st session.State, prev *published, unread int, now time.Time) Agent {
	rec := st.Record
	a := Agent{AgentID: rec.AgentID, Identity: rec.Identity, Kind: rec.Kind(), Model: st.Model,
		Role: rec.Role, Tag: rec.Tag, Cwd: rec.Cwd, Repo: rec.RepoRoot, Branch: rec.Branch, Status: st.Status,
		Turns: st.Turns, Queued: st.Queued, Usage: st.Usage, Budget: st.Budget, UnreadMail: max(unread, st.UnreadMail), SubAgents: st.SubAgents}
	a.State = stateOf(st)
	a.StateSince = now
	if prev != nil {
		a.Spans = append([]Span(nil), prev.agent.Spans...)
		if prev.agent.State == a.State {
			a.StateSince = prev.agent.StateSince
		}
	}
	if !st.TurnStarted.IsZero() {
		t := st.TurnStarted
		a.TurnStarted = &t
		if a.State == StateWorking || a.State == StateApproval {
			a.StateSince = t
			if len(st.Approvals) > 0 {
				a.StateSince = st.Approvals[0].Created
			}
		}
		a.Item = &Item{Type: "thinking", Summary: "thinking", Since: t}
		if it := st.Item; it != nil {
			a.Item = &Item{Type: it.Type, Summary: it.Summary, Since: it.Since}
		}
		if n := len(a.Spans); n == 0 || !a.Spans[n-1].Start.Equal(t) {
			if n > 0 && a.Spans[n-1].End.IsZero() {
				a.Spans[n-1].End = t // the turn before ended unseen
			}
			a.Spans = append(a.Spans, Span{Start: t})
		}
	}
	if st.Last != nil {
		a.Last = &Result{Status: st.Last.Status, Error: st.Last.Error}
		a.Last.At, _ = time.Parse(time.RFC3339Nano, st.Last.FinishedAt)
		if st.Last.Content != nil {
			a.Last.Text = session.Clip(*st.Last.Content, 4000)
		}
	}
	if st.TurnStarted.IsZero() {
		if n := len(a.Spans); n > 0 && a.Spans[n-1].End.IsZero() {
			a.Spans[n-1].End = now
			if a.Last != nil && !a.Last.At.IsZero() && !a.Last.At.Before(a.Spans[n-1].Start) {
				a.Spans[n-1].End = a.Last.At
				a.Spans[n-1].Status = a.Last.Status
			}
		}
	}
	if len(a.Spans) > maxSpans {
		a.Spans = a.Spans[len(a.Spans)-maxSpans:]
	}
	for _, p := range st.Approvals {
		a.Approvals = append(a.Approvals, Approval{ID: p.ApprovalID, Kind: p.Kind, Question: p.Question, Command: p.Command, Cwd: p.Cwd, Since: p.Created})
	}
	sort.Slice(a.Approvals, func(i, j int) bool { return a.Approvals[i].Since.Before(a.Approvals[j].Since) })
	if n := len(st.Messages); n > 5 {
		st.Messages = st.Messages[n-5:]
	}
	for _, m := range st.Messages {
		a.Messages = append(a.Messages, session.Clip(m, 1000))
	}
	for _, e := range st.Events {
		a.Events = append(a.Events, Event{Time: e.Time, Type: e.Type, Summary: session.Clip(e.Summary, 200)})
	}
	if st.Problem != nil {
		a.Problem = st.Problem.Message
	}
	return a
}

// stateOf maps a session's status to a view's state.
func stateOf(st session.State) string {
	switch st.Status {
	case "busy":
		return StateWorking
	case "awaiting_approval":
		return StateApproval
	case "error":
		return StateFailed
	case "closed":
		return StateClosed
	}
	if st.AutoMail {
		return StateWaitingMail
	}
	return StateIdle
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// Answer answers a pending approval of one of the serve's sessions from
// elsewhere (from names where, for the audit): the same queue agent_respond
// answers, where the first answer wins.
func (f *Feed) Answer(agentID, approvalID, decision, reason, from string) error {
	s := f.sessions.Get(agentID)
	if s == nil {
		return fmt.Errorf("no session with agent_id %q in this serve", agentID)
	}
	d, err := session.ParseAnswer(decision, reason)
	if err != nil {
		return err
	}
	if d.Kind == backend.Abort {
		return errors.New("abort is agent_interrupt's, not an approval answer")
	}
	if approvalID == "" {
		return errors.New("answer: approval_id is required")
	}
	_, err = s.RespondFrom(approvalID, d, firstNonEmpty(from, "the feed"))
	return err
}

var _ session.Observer = (*Feed)(nil)

// ctxStop returns a context that ends when the feed stops.
func (f *Feed) ctxStop() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-f.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}
