package view

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// TeamConfig configures a Team.
type TeamConfig struct {
	// Dirs are the registry directories whose instances' feed records are
	// read (a team's, and for a Claude Code session team the shared
	// one). required.
	Dirs []string
	// Team keeps only the serves of this team ("" keeps every serve).
	Team string
	// Rescan is how often the records are read again and gone serves
	// dialled again. optional: 0 means 500 ms.
	Rescan time.Duration
	// Subscriber is how many updates wait for a subscriber before it is
	// dropped as too slow. optional: 0 means 8192.
	Subscriber int
	// MailRing is how much mail is kept. optional: 0 means 1000.
	MailRing int
	// Registries are the team's registries, whose records add the
	// sessions no feed shows to the team's totals and hold a team budget
	// set at run time (totals.go). optional: none adds nothing.
	Registries []registry.Dir
	// Prices price the tokens of those sessions by model. optional.
	Prices session.Prices
	// Budget is the configured team budget in tokens. optional: 0 means
	// none (one set at run time wins).
	Budget int64
	// Logger receives the logs. optional: nil discards.
	Logger *slog.Logger
	// Now returns the current time. optional: nil means time.Now.
	Now func() time.Time
}

// ServeState is a serve of the team as a view knows it.
type ServeState struct {
	feed.Serve
	Live bool `json:"live"`
	// Since is when it became live or gone.
	Since time.Time `json:"since"`
}

// Update is one change of a Team: an agent's state, a mail, a serve.
type Update struct {
	Type   string      `json:"type"` // agent, mail, serve, totals
	Agent  *feed.Agent `json:"agent,omitempty"`
	Mail   *feed.Mail  `json:"mail,omitempty"`
	Serve  *ServeState `json:"serve,omitempty"`
	Totals *Totals     `json:"totals,omitempty"`
}

// Snapshot is everything a Team knows.
type Snapshot struct {
	Team   string       `json:"team"`
	Serves []ServeState `json:"serves"`
	Agents []feed.Agent `json:"agents"`
	Mail   []feed.Mail  `json:"mail"`
	// Totals are what the registries add to the agents' usage, and the
	// team's budget (totals.go).
	Totals Totals `json:"totals"`
}

// Team merges the feeds of every serve of a team: it finds them from
// their records, follows each one's stream, and keeps going as serves
// start and exit (an exited serve's agents are shown gone).
type Team struct {
	cfg TeamConfig
	log *slog.Logger

	mu      sync.Mutex // guards the fields below
	serves  map[string]*serveConn
	agents  map[string]*feed.Agent // by serve/agent_id
	mail    []feed.Mail
	mailKey map[string]bool
	subs    map[chan Update]bool
	// ready is closed once every record found by the first scan has
	// given a snapshot or failed.
	ready   chan struct{}
	pending int
	tot     Totals // what the registries add (totals.go)
}

// serveConn is one serve's stream.
type serveConn struct {
	rec     feed.Record
	state   ServeState
	conn    *feed.Conn
	running bool // a goroutine dials or reads it
	synced  bool // its snapshot arrived
	nextID  int64
	waiting map[int64]chan feed.Frame
}

// NewTeam returns a Team; Run follows the serves.
func NewTeam(cfg TeamConfig) *Team {
	if cfg.Rescan <= 0 {
		cfg.Rescan = 500 * time.Millisecond
	}
	if cfg.Subscriber <= 0 {
		cfg.Subscriber = 8192
	}
	if cfg.MailRing <= 0 {
		cfg.MailRing = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Team{cfg: cfg, log: cfg.Logger.With("component", "view"), serves: map[string]*serveConn{}, agents: map[string]*feed.Agent{},
		mailKey: map[string]bool{}, subs: map[chan Update]bool{}, ready: make(chan struct{})}
}

// Run follows the team's serves until ctx ends.
func (t *Team) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	first := true
	tick := time.NewTicker(t.cfg.Rescan)
	defer tick.Stop()
	for n := 0; ; n++ {
		for _, sc := range t.scan(first) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.follow(ctx, sc)
			}()
		}
		first = false
		select {
		case <-t.ready:
			if n%totalsEvery == 0 {
				t.refreshTotals() // after the first snapshots: what they show is not counted twice
			}
		default:
			n = -1 // the first look follows the first snapshots
		}
		select {
		case <-ctx.Done():
			t.mu.Lock()
			for _, sc := range t.serves {
				if sc.conn != nil {
					sc.conn.Close()
				}
			}
			t.mu.Unlock()
			return
		case <-tick.C:
		}
	}
}

// Ready is closed once every serve found at the start has given its
// snapshot or could not be reached.
func (t *Team) Ready() <-chan struct{} { return t.ready }

// totalsEvery is how many rescans go between two reads of the totals.
const totalsEvery = 4

// Refresh reads the registries' totals now (status, right after Ready).
func (t *Team) Refresh() { t.refreshTotals() }

// scan reads the records and returns the serves to follow now: new ones,
// and known ones that are not followed (gone, or a new record: a serve
// that started again under the same instance).
func (t *Team) scan(first bool) []*serveConn {
	recs := map[string]feed.Record{}
	for _, dir := range t.cfg.Dirs {
		rs, err := feed.Records(dir)
		if err != nil {
			t.log.Debug("cannot read the feed records", "dir", dir, "err", err)
			continue
		}
		for inst, r := range rs {
			if t.cfg.Team == "" || r.Serve.Team == t.cfg.Team {
				recs[inst] = r
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var start []*serveConn
	for inst, r := range recs {
		sc := t.serves[inst]
		switch {
		case sc == nil:
			sc = &serveConn{rec: r, state: ServeState{Serve: r.Serve}, waiting: map[int64]chan feed.Frame{}}
			t.serves[inst] = sc
		case sc.running:
			continue
		case sc.rec.Socket != r.Socket || sc.rec.Serve.PID != r.Serve.PID:
			sc.rec, sc.state.Serve = r, r.Serve // started again
		}
		sc.running = true
		start = append(start, sc)
	}
	if first {
		t.pending = len(start)
		if t.pending == 0 {
			close(t.ready)
		}
	}
	return start
}

// follow dials a serve and reads its stream until it ends.
func (t *Team) follow(ctx context.Context, sc *serveConn) {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	conn, err := feed.Dial(dctx, sc.rec.Socket)
	cancel()
	if err != nil {
		t.gone(sc, err)
		return
	}
	t.mu.Lock()
	sc.conn = conn
	t.mu.Unlock()
	for {
		fr, err := conn.Next()
		if err != nil {
			conn.Close()
			t.gone(sc, err)
			return
		}
		t.take(sc, fr)
	}
}

// take keeps what a frame of a serve tells and passes it on.
func (t *Team) take(sc *serveConn, fr feed.Frame) {
	inst := sc.rec.Serve.Instance
	t.mu.Lock()
	defer t.mu.Unlock()
	switch fr.Type {
	case "hello":
		if fr.Serve != nil {
			sc.state.Serve = *fr.Serve
		}
		sc.state.Live, sc.state.Since = true, t.cfg.Now()
		st := sc.state
		t.publishLocked(Update{Type: "serve", Serve: &st})
	case "snapshot":
		for key, a := range t.agents {
			if a.Serve == inst {
				delete(t.agents, key)
			}
		}
		for _, a := range fr.Agents {
			t.putAgentLocked(inst, a)
		}
		for _, m := range fr.MailList {
			t.putMailLocked(m)
		}
		if !sc.synced {
			sc.synced = true
			t.settledLocked()
		}
	case "agent":
		if fr.Agent != nil {
			t.putAgentLocked(inst, *fr.Agent)
		}
	case "mail":
		if fr.Mail != nil {
			t.putMailLocked(*fr.Mail)
		}
	case "answered", "diffed":
		if ch := sc.waiting[fr.ID]; ch != nil {
			delete(sc.waiting, fr.ID)
			ch <- fr
		}
	}
}

// gone marks a serve's stream ended: its agents are gone (a serve closes
// its sessions as it exits; what the user needs to see is that the serve
// and its agents are no more).
func (t *Team) gone(sc *serveConn, why error) {
	inst := sc.rec.Serve.Instance
	t.mu.Lock()
	defer t.mu.Unlock()
	sc.running, sc.conn = false, nil
	for id, ch := range sc.waiting {
		delete(sc.waiting, id)
		ch <- feed.Frame{Type: "answered", ID: id, Error: "the serve is gone"}
	}
	if !sc.synced {
		sc.synced = true // it will not give one now
		t.settledLocked()
	}
	if !sc.state.Live && !sc.state.Since.IsZero() {
		return // known gone already
	}
	t.log.Debug("a serve of the team is gone", "instance", inst, "err", why)
	now := t.cfg.Now()
	sc.state.Live, sc.state.Since = false, now
	st := sc.state
	t.publishLocked(Update{Type: "serve", Serve: &st})
	for _, a := range t.agents {
		if a.Serve != inst || a.State == feed.StateGone {
			continue
		}
		a.State, a.StateSince, a.Item, a.Approvals, a.TurnStarted = feed.StateGone, now, nil, nil, nil
		if n := len(a.Spans); n > 0 && a.Spans[n-1].End.IsZero() {
			a.Spans[n-1].End, a.Spans[n-1].Status = now, "gone"
		}
		cp := *a
		t.publishLocked(Update{Type: "agent", Agent: &cp})
	}
}

// settledLocked counts a first-scan serve as settled; t.mu is held.
func (t *Team) settledLocked() {
	if t.pending > 0 {
		t.pending--
		if t.pending == 0 {
			close(t.ready)
		}
	}
}

func (t *Team) putAgentLocked(inst string, a feed.Agent) {
	a.Serve = inst
	t.agents[inst+"/"+a.AgentID] = &a
	cp := a
	t.publishLocked(Update{Type: "agent", Agent: &cp})
}

func (t *Team) putMailLocked(m feed.Mail) {
	if t.mailKey[m.Key] {
		return
	}
	t.mailKey[m.Key] = true
	t.mail = append(t.mail, m)
	if over := len(t.mail) - t.cfg.MailRing; over > 0 {
		for _, old := range t.mail[:over] {
			delete(t.mailKey, old.Key)
		}
		t.mail = append([]feed.Mail(nil), t.mail[over:]...)
	}
	cp := m
	t.publishLocked(Update{Type: "mail", Mail: &cp})
}

// publishLocked passes an update to every subscriber; one too slow to
// keep up is dropped (its channel closed). t.mu is held.
func (t *Team) publishLocked(u Update) {
	for ch := range t.subs {
		select {
		case ch <- u:
		default:
			delete(t.subs, ch)
			close(ch)
		}
	}
}

// Subscribe returns the snapshot and a channel of the updates after it;
// the channel is closed when the subscriber is too slow (start again) or
// cancel is called.
func (t *Team) Subscribe() (Snapshot, <-chan Update, func()) {
	ch := make(chan Update, t.cfg.Subscriber)
	t.mu.Lock()
	snap := t.snapshotLocked()
	t.subs[ch] = true
	t.mu.Unlock()
	return snap, ch, func() {
		t.mu.Lock()
		if t.subs[ch] {
			delete(t.subs, ch)
			close(ch)
		}
		t.mu.Unlock()
	}
}

// Snapshot returns everything the Team knows now.
func (t *Team) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked()
}

func (t *Team) snapshotLocked() Snapshot {
	s := Snapshot{Team: t.cfg.Team, Serves: []ServeState{}, Agents: []feed.Agent{}, Mail: append([]feed.Mail{}, t.mail...), Totals: t.tot}
	for _, sc := range t.serves {
		if sc.state.Since.IsZero() && !sc.state.Live {
			continue // never reached
		}
		s.Serves = append(s.Serves, sc.state)
	}
	sort.Slice(s.Serves, func(i, j int) bool { return s.Serves[i].Instance < s.Serves[j].Instance })
	for _, a := range t.agents {
		s.Agents = append(s.Agents, *a)
	}
	sort.Slice(s.Agents, func(i, j int) bool {
		if s.Agents[i].Identity != s.Agents[j].Identity {
			return s.Agents[i].Identity < s.Agents[j].Identity
		}
		return s.Agents[i].Serve < s.Agents[j].Serve
	})
	return s
}

// ErrServeGone: the serve that owns the approval is not reachable.
var ErrServeGone = errors.New("the serve is gone")

// Answer sends an answer to an approval to the serve that owns it and
// returns its verdict (nil: taken).
func (t *Team) Answer(ctx context.Context, serve, agentID, approvalID, decision, from string) error {
	_, err := t.ask(ctx, serve, feed.Frame{Type: "answer", AgentID: agentID, ApprovalID: approvalID, Decision: decision, From: from})
	if err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	return nil
}

// Diff asks the serve that runs an isolated agent for its change against
// its base: the unified patch (cut at the serve's limit: more says so).
func (t *Team) Diff(ctx context.Context, serve, agentID string) (patch string, more bool, err error) {
	fr, err := t.ask(ctx, serve, feed.Frame{Type: "diff", AgentID: agentID})
	if err != nil {
		return "", false, fmt.Errorf("diff: %w", err)
	}
	return fr.Text, fr.More, nil
}

// ask sends a request frame to a serve and waits for its answer (a
// frame with the request's ID); an answer that is not OK is its error.
func (t *Team) ask(ctx context.Context, serve string, req feed.Frame) (feed.Frame, error) {
	t.mu.Lock()
	sc := t.serves[serve]
	if sc == nil || sc.conn == nil {
		t.mu.Unlock()
		return feed.Frame{}, fmt.Errorf("%w: %s", ErrServeGone, serve)
	}
	sc.nextID++
	req.ID = sc.nextID
	ch := make(chan feed.Frame, 1)
	sc.waiting[req.ID] = ch
	conn := sc.conn
	t.mu.Unlock()
	if err := conn.Send(req); err != nil {
		t.mu.Lock()
		delete(sc.waiting, req.ID)
		t.mu.Unlock()
		return feed.Frame{}, err
	}
	select {
	case fr := <-ch:
		if !fr.OK {
			return fr, errors.New(fr.Error)
		}
		return fr, nil
	case <-ctx.Done():
		t.mu.Lock()
		delete(sc.waiting, req.ID)
		t.mu.Unlock()
		return feed.Frame{}, ctx.Err()
	}
}
