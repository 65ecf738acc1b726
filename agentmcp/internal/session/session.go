package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend/outputschema"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Session states (docs/requirements.md#fr-17).
const (
	stateBusy   = registry.ThreadBusy
	stateIdle   = registry.ThreadIdle
	stateClosed = registry.ThreadClosed
)

// Source says who asked for a turn; it orders a session's queue: Claude's
// turns in FIFO order before auto-mail (FR-17.11).
type Source int

// The sources.
const (
	SourceClaude Source = iota
	SourceResume
	SourceMail
	SourceSummary
)

func (s Source) String() string {
	switch s {
	case SourceClaude:
		return "claude"
	case SourceResume:
		return "resume"
	case SourceMail:
		return "auto-mail"
	case SourceSummary:
		return "summary"
	}
	return "unknown"
}

// Turn is one turn to run on a session.
type Turn struct {
	Prompt string
	// Call is the client request that asked for the turn; nil for turns the
	// proxy starts (mail, summaries) and for background turns.
	Call CallRef
	// Source is who asked; it is audited and orders the queue.
	Source Source
	// SameThread continues the session's thread even after an interrupt
	// (the summary of an interrupted turn must come from that thread).
	SameThread bool
	// Timeout overrides the request timeout. optional.
	Timeout time.Duration
	// OnSent is called once the turn's request is written to the child.
	// optional.
	OnSent func()
	// OnAccepted is called once the child has acknowledged the turn
	// (backend.TurnRequest.OnAccepted), on the backend's reader: it must
	// not block. optional.
	OnAccepted func()
	// Asker answers the turn's approvals. optional: nil means
	// Config.Asker.
	Asker Asker
	// NotSteered says that the prompt was to be added to a running turn
	// (SteerTurn) and could not be: the result says so
	// (TurnResult.NotSteered). optional.
	NotSteered bool
	// Output is the JSON Schema the turn's answer must follow (output.go):
	// the answer is checked against it, and the result carries the JSON
	// (TurnResult.Output). optional.
	Output *outputschema.Schema
}

// TurnResult is how a turn ended, as the client is told.
type TurnResult struct {
	AgentID  string
	ThreadID string
	Identity string
	// Text is the result's text, capped at Config.MaxResultChars.
	Text    string
	Status  string // completed, failed, interrupted
	IsError bool
	// Thread says whether the turn continued the session's thread: given
	// for the first turn after a resume and for a turn on a new thread in
	// place of the session's; nil otherwise.
	Thread *ThreadNote
	// Place is the session's own place (isolation worktree), where the
	// turn ran; nil for a session without one.
	Place *Place
	// Steered: the prompt was added to the turn that was running
	// (SteerTurn), and this is that turn's result. NotSteered: it was to
	// be, and ran as a turn of its own (Turn.NotSteered).
	Steered, NotSteered bool
	// SubAgents are the agents the turn's agent started of its own
	// (Codex's collab sub-agents), as they stood when the turn was done;
	// SubAgentsNote says why it was reported done while some still ran
	// (the configured wait passed). Not members of the team.
	SubAgents     []backend.SubAgent
	SubAgentsNote string
	// Output is the answer's JSON when the turn had an output schema and
	// the answer matched it; OutputError says why it did not (the result
	// is then an error, its text the answer as it was); OutputHow is how
	// the answer was asked for (OutputConstrained, OutputPrompted).
	Output      json.RawMessage
	OutputError string
	OutputHow   string
}

// job is one queued turn. run executes it with the session marked busy;
// done is called exactly once with its outcome, after the session has moved
// on (idle, or its next job started), so that the answer never arrives
// before the state it implies; discard fails a job that never ran.
type job struct {
	source  Source
	run     func(ctx context.Context, j *job) (*TurnResult, error)
	done    func(*TurnResult, error)
	discard func(err error)

	// Set when the turn was answered from the backend's reader (replyFromReader):
	// the session has moved on and the answer is out.
	answered atomic.Bool
	idle     bool // what moving on reported; read after answered
	// stopCancel unhooks the turn from the client's request (set by
	// Session.Run), so that the request's end does not cancel a turn that
	// was answered from the backend's reader.
	stopCancel func() bool

	// Guarded by Session.mu (steer.go): steerRefused is set once a steer
	// into this turn was not taken, so that no more input is steered into
	// it; after are called with its outcome once it has ended (input
	// steered into it waits for that); ended says they have been.
	steerRefused bool
	after        []func(*TurnResult, error)
	ended        bool
}

// Session is one agent session (of any kind): its record, its queue of turns, its
// approvals and what its events told. Its queue enforces the single-flight
// rule (FR-8.9): one turn in flight from any source; Claude's turns wait in
// FIFO order and go before auto-mail, which starts only on an idle session
// with nothing queued. Only Session methods change a session's state.
type Session struct {
	m *Manager

	mu        sync.Mutex // guards every field below
	rec       registry.Session
	queue     []*job
	running   *job
	runCancel context.CancelFunc
	closing   chan struct{} // non-nil while a close runs; closed when it ends
	autoMail  bool
	params    ThreadSettings
	paramsGen int // bumped when params change (the thread-parameters cache key)
	// seed is what a new thread in place of the session's is told of the
	// old one (an adopted session's last messages, a resumed one's summary
	// or last result), for the next turn only; seedWhat names it.
	seed, seedWhat string
	// told is what a fork whose agent could not fork its parent's thread
	// is told of the parent (fork.go), in front of the prompt of the turn
	// that starts its thread.
	told    string
	resumed *resumeMark // set by Rebind: the next turn resumes the session
	// savedThread is the thread id the registry has (the persister's last
	// write): a turn's result on another thread waits for its write.
	savedThread string
	// final is the session's final record when Manager.finishAll wrote it
	// (a shutdown), for its Close to take.
	final *registry.Session
	// place is the session's own place while it is live (isolation
	// worktree: place.go), nil otherwise; released is what its close did
	// with it.
	place       *Place
	released    *Released
	held        chan struct{} // non-nil while a Hold runs (hold.go); closed when it ends
	idleCh      chan struct{}
	turnStarted time.Time // when the running turn started (State)
	approvals   map[string]*pending
	act         activity
	last        *outcome
	fullResult  string        // the last result's text before the cap
	turnDone    chan struct{} // closed (and replaced) whenever a turn ends
	ids         IDs           // quoted agent_id and identity
	idsFor      [2]string     // the agent_id and identity ids encodes
	cache       turnCache

	forwarded, dropped atomic.Int64 // events passed on and dropped (FR-19.4)
}

// outcome is how a turn ended, kept for agent_status and agent_wait.
type outcome struct {
	status   string // completed, failed, interrupted, error
	text     string // the result text (capped)
	isError  bool
	err      error // a proxy error (timeout, child dead)
	threadID string
	thread   *ThreadNote // whether it continued the session's thread (TurnResult.Thread)
	finished time.Time
	// subAgents and subAgentsNote are the result's (TurnResult); output,
	// outputError and outputHow its answer to an output schema.
	subAgents     []backend.SubAgent
	subAgentsNote string
	output        json.RawMessage
	outputError   string
	outputHow     string
}

// newSession wraps a registry record; the session runs nothing yet.
func (m *Manager) newSession(rec registry.Session) *Session {
	s := &Session{m: m, rec: rec, autoMail: true, idleCh: make(chan struct{}), turnDone: make(chan struct{}),
		act: activity{size: m.cfg.EventRing, model: rec.Model}, savedThread: rec.BackendID}
	s.act.usage.seed(rec.Usage) // counted on from every earlier serve's (usagesaved.go)
	return s
}

// Record returns a copy of the session's registry record.
func (s *Session) Record() registry.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// SetCwd changes the directory the session's next turns run in (an
// existing directory, see Catalogue.ResolveCwd).
func (s *Session) SetCwd(cwd string) {
	s.mu.Lock()
	s.rec.Cwd = cwd
	s.mu.Unlock()
}

// Adopt binds a session just created to an existing Codex thread (codex
// with thread_id); seed is what a backend that cannot resume the thread
// puts in front of the fresh thread it starts instead (the adopted
// session's last messages).
func (s *Session) Adopt(threadID, seed string) {
	s.mu.Lock()
	s.rec.BackendID = threadID
	s.seed, s.seedWhat = seed, "its last messages in the adopted Codex session"
	s.mu.Unlock()
	s.m.persist.now(s)
	s.m.cfg.Audit.Session("session_adopted", s.Record(), "codex thread "+threadID)
}

// Run queues t behind the session's earlier turns and returns its result.
// On an idle session the turn runs on the calling goroutine; a turn that
// waits in the queue first releases the caller's call (CallRef.Release). If
// ctx ends while the turn waits, it is skipped; while it runs, it is
// interrupted. It returns ErrAnswered when the result went to the client
// from the backend's reader already.
func (s *Session) Run(ctx context.Context, t Turn) (*TurnResult, error) {
	var res *TurnResult
	var err error
	doneCh := make(chan struct{})
	j := &job{source: t.Source}
	j.run = func(jobCtx context.Context, j *job) (*TurnResult, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		runCtx, cancel := context.WithCancel(jobCtx)
		defer cancel()
		j.stopCancel = context.AfterFunc(ctx, cancel)
		defer j.stopCancel()
		r, err := s.turn(runCtx, j, t, true)
		if err != nil && ctx.Err() != nil && !errors.Is(err, ErrAnswered) {
			err = ctx.Err()
		}
		return r, err
	}
	j.done = func(r *TurnResult, e error) { res, err = r, e; close(doneCh) }
	j.discard = func(e error) { j.done(nil, e) }
	inline, serr := s.submit(j, true)
	if serr != nil {
		return nil, serr
	}
	if !inline && t.Call != nil {
		t.Call.Release()
	}
	<-doneCh
	return res, err
}

// RunBackground queues t and returns at once (background: true); its
// outcome is kept for agent_status and agent_wait.
func (s *Session) RunBackground(t Turn) (*TurnResult, error) {
	return s.RunBackgroundThen(t, nil)
}

// RunBackgroundThen is RunBackground, with then (optional: nil means none)
// called on a goroutine of its own with how the turn ended, after the
// session moved on (so then may close the session).
func (s *Session) RunBackgroundThen(t Turn, then func(*TurnResult, error)) (*TurnResult, error) {
	j := &job{source: t.Source}
	j.run = func(ctx context.Context, j *job) (*TurnResult, error) { return s.turn(ctx, j, t, false) }
	j.done = func(r *TurnResult, err error) {
		if err != nil {
			s.m.log.Info("background turn failed", "agent_id", s.Record().AgentID, "err", err)
		}
		if then != nil {
			go then(r, err)
		}
	}
	j.discard = func(err error) {
		s.recordOutcome(&outcome{status: "error", err: err, finished: s.m.now()}, "")
		if then != nil {
			go then(nil, err)
		}
	}
	if _, err := s.submit(j, false); err != nil {
		return nil, err
	}
	rec := s.Record()
	return &TurnResult{AgentID: rec.AgentID, ThreadID: rec.BackendID, Identity: rec.Identity, Status: "busy", Place: s.Place()}, nil
}

// Handle is a turn started with Start: its caller may stop waiting for it
// and come back, while the turn goes on.
type Handle struct {
	done chan struct{}
	res  *TurnResult
	err  error

	mu        sync.Mutex
	cancel    context.CancelFunc // the running turn's; nil before it runs
	cancelled bool
}

// Done is closed when the turn has ended (and the session moved on).
func (h *Handle) Done() <-chan struct{} { return h.done }

// Result returns how the turn ended; valid once Done is closed.
func (h *Handle) Result() (*TurnResult, error) { return h.res, h.err }

// Cancel interrupts the turn (a queued one never runs), as the end of
// Run's ctx does.
func (h *Handle) Cancel() {
	h.mu.Lock()
	h.cancelled = true
	cancel := h.cancel
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Start queues t like Run and returns at once: the turn's outcome comes
// through the Handle (and, as every turn's, agent_status and agent_wait).
// A client request that must answer before its turn ends (a modern
// client's approval, asked with a multi round-trip result) waits on it.
func (s *Session) Start(t Turn) (*Handle, error) {
	h := &Handle{done: make(chan struct{})}
	j := &job{source: t.Source}
	j.run = func(ctx context.Context, j *job) (*TurnResult, error) {
		h.mu.Lock()
		if h.cancelled {
			h.mu.Unlock()
			return nil, context.Canceled
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		h.cancel = cancel
		h.mu.Unlock()
		return s.turn(ctx, j, t, false)
	}
	j.done = func(r *TurnResult, err error) { h.res, h.err = r, err; close(h.done) }
	j.discard = func(err error) { j.done(nil, err) }
	if _, err := s.submit(j, false); err != nil {
		return nil, err
	}
	return h, nil
}

// TryMail starts an auto-mail turn with prompt only if the session is idle
// with nothing queued and auto-mail on (FR-8.10, FR-17.6). report is called
// exactly once when it returns true (the mail layer marks the mail read on
// true, FR-8.12): true as soon as the agent acknowledged the turn (OnAccepted,
// possibly on the backend's reader), or when the turn ended unacknowledged
// but written to a child that did not die (interrupted or timed out, and
// silent for the backend's wait for an acknowledgement: that child has
// the request in its input); false when the request was never written, or
// the child died or was stopped before acknowledging it (the agent may never
// have read it: the mail is offered again after a restart, at the price
// of a duplicate if the agent had read it).
func (s *Session) TryMail(prompt string, report func(sent bool)) bool {
	return s.TryMailThen(prompt, report, nil)
}

// TryMailThen is TryMail, and when it returns true, ended (optional) is
// called once the mail turn is over and the session has moved on, with the
// turn's result or error: how the proxy tells the mail's senders that the
// agent is idle again (an idle_notification).
func (s *Session) TryMailThen(prompt string, report func(sent bool), ended func(*TurnResult, error)) bool {
	var once sync.Once
	rep := func(sent bool) { once.Do(func() { report(sent) }) }
	j := &job{source: SourceMail}
	j.run = func(ctx context.Context, j *job) (*TurnResult, error) {
		var sent bool // set on this goroutine, by the backend's Turn
		r, err := s.turn(ctx, j, Turn{Prompt: prompt, Source: SourceMail,
			OnSent: func() { sent = true }, OnAccepted: func() { rep(true) }}, false)
		rep(sent && !errors.Is(err, backend.ErrChildExited))
		return r, err
	}
	j.done = func(r *TurnResult, err error) {
		if err != nil {
			s.m.log.Warn("auto-mail turn failed", "agent_id", s.Record().AgentID, "err", err)
		}
		if ended != nil {
			ended(r, err)
		}
	}
	j.discard = func(error) { rep(false) }
	if s.overBudget(SourceMail) != nil {
		return false // a token budget is used up: the mail waits unread (budget.go)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing != nil || s.rec.ThreadState != stateIdle || s.running != nil || len(s.queue) > 0 || !s.autoMail || s.held != nil {
		return false
	}
	go s.startLocked(j)()
	return true
}

// submit queues j; when the session is idle it starts at once, on the
// calling goroutine when inline is set (submit then returns after j has
// finished, reporting true), else on a goroutine of its own. It fails with
// SESSION_CLOSED when the session is closed or closing, and at once with
// the backend's CHILD_PROCESS_DEAD when its agent is down and will not
// come back by itself (backend.Availability).
func (s *Session) submit(j *job, inline bool) (ranInline bool, err error) {
	b, err := s.m.cat.of(s.Record())
	if err != nil {
		return false, err // a kind this serve does not have (agents.go)
	}
	if err := backend.Unavailable(b); err != nil {
		return false, err // its agent is down: nothing queued, written or audited (recovery.go)
	}
	if err := s.overBudget(j.source); err != nil {
		return false, err // a token budget is used up: nothing queued (budget.go)
	}
	s.mu.Lock()
	if s.closing != nil || s.rec.ThreadState == stateClosed {
		id := s.rec.AgentID
		s.mu.Unlock()
		return false, proxyerr.New(proxyerr.ErrSessionClosed, map[string]any{"agent_id": id}, "session %s is closed", id)
	}
	if s.running != nil || s.held != nil {
		// Claude's turns keep FIFO order among themselves and go before any
		// queued auto-mail.
		i := len(s.queue)
		if j.source != SourceMail {
			for i > 0 && s.queue[i-1].source == SourceMail {
				i--
			}
		}
		s.queue = append(s.queue, nil)
		copy(s.queue[i+1:], s.queue[i:])
		s.queue[i] = j
		s.mu.Unlock()
		return false, nil
	}
	run := s.startLocked(j)
	s.mu.Unlock()
	if inline {
		run()
		return true, nil
	}
	go run()
	return false, nil
}

// startLocked makes j the running job and returns the function that runs
// it; s.mu is held.
func (s *Session) startLocked(j *job) (run func()) {
	ctx, cancel := context.WithCancel(s.m.ctx)
	s.running, s.runCancel = j, cancel
	s.turnStarted = s.m.now()
	setState(&s.rec, stateBusy, s.m.now())
	s.m.persist.async(s)
	s.m.wg.Add(1)
	return func() {
		defer s.m.wg.Done()
		defer cancel()
		s.changed() // busy
		res, err := j.run(ctx, j)
		var idle bool
		if j.answered.Load() {
			idle = j.idle // moved on and answered on the backend's reader
			err = ErrAnswered
		} else {
			idle = s.finish(j)
		}
		if idle && s.m.cfg.Mail != nil {
			s.m.cfg.Mail.Idle(s.Record().Identity) // the post-turn mail check (FR-8.1)
		}
		j.done(res, err)
		s.jobEnded(j, res, err) // what was steered into it (steer.go)
		if p := s.Place(); p != nil && s.m.cfg.Places != nil {
			s.m.cfg.Places.TurnEnded(p) // the conflict radar, off this goroutine
		}
		s.refreshHostFacts() // on a host: for the next turn (hosts.go)
	}
}

// finish runs after a job: the next queued job starts, else the session
// becomes idle; it reports whether the mail layer should be told.
func (s *Session) finish(j *job) bool {
	defer s.changed() // idle, or the next turn (after the unlocks below)
	s.mu.Lock()
	if s.running == j {
		s.running, s.runCancel = nil, nil
	}
	if s.closing != nil || s.rec.ThreadState == stateClosed {
		idle := s.idleCh
		s.idleCh = make(chan struct{})
		s.mu.Unlock()
		close(idle)
		return false
	}
	if len(s.queue) > 0 {
		next := s.queue[0]
		s.queue = s.queue[1:]
		go s.startLocked(next)()
		s.mu.Unlock()
		return false
	}
	setState(&s.rec, stateIdle, s.m.now())
	s.m.persist.async(s)
	idle := s.idleCh
	s.idleCh = make(chan struct{})
	s.mu.Unlock()
	close(idle)
	return true
}

// setState records a state change in a session's record.
func setState(rec *registry.Session, state registry.ThreadState, now time.Time) {
	rec.ThreadState = state
	switch state {
	case stateBusy:
		rec.Status = registry.StatusBusy
	case stateIdle:
		rec.Status = registry.StatusIdle
	}
	rec.LastActive = now
}

// waitIdle blocks until the session is idle or closed, or ctx ends.
func (s *Session) waitIdle(ctx context.Context) bool {
	for {
		s.mu.Lock()
		if s.running == nil && len(s.queue) == 0 {
			s.mu.Unlock()
			return true
		}
		ch := s.idleCh
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// recordOutcome keeps the outcome of a turn and wakes agent_wait.
func (s *Session) recordOutcome(o *outcome, full string) {
	s.mu.Lock()
	s.last = o
	s.fullResult = full
	done := s.turnDone
	s.turnDone = make(chan struct{})
	s.mu.Unlock()
	close(done)
	s.changed()
	s.m.cfg.changed()
}

// Interrupt interrupts the session's running turn (agent_interrupt): its
// approvals are denied, the agent is told, and the turn's outcome becomes
// "interrupted". It reports false when nothing was running.
func (s *Session) Interrupt(ctx context.Context) (bool, error) {
	return s.interrupt(ctx, "by agent_interrupt")
}

// interrupt is Interrupt; why goes to the audit ("by agent_interrupt").
func (s *Session) interrupt(ctx context.Context, why string) (bool, error) {
	s.mu.Lock()
	running := s.running != nil
	runCancel := s.runCancel
	rec := s.rec
	thread := rec.BackendID
	done := s.turnDone
	s.mu.Unlock()
	if !running {
		return false, nil
	}
	s.denyApprovals("the turn was interrupted")
	if b, err := s.m.cat.of(rec); err == nil && thread != "" {
		_ = b.Interrupt(ctx, thread)
	}
	if runCancel != nil {
		runCancel()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
		return false, ctx.Err()
	}
	s.mu.Lock()
	if s.last == nil || s.last.status != "interrupted" {
		s.last = &outcome{status: "interrupted", text: "interrupted", isError: true, threadID: thread, finished: s.m.now()}
	}
	s.mu.Unlock()
	s.m.cfg.Audit.Session("turn_interrupted", s.Record(), why)
	return true, nil
}

// Wait waits up to max for the session's running and queued turns to end
// (agent_wait) and reports whether they did; progress (optional) is told
// the latest event every 5 s meanwhile.
func (s *Session) Wait(ctx context.Context, max time.Duration, progress func(msg string)) (bool, error) {
	s.mu.Lock()
	busy := s.running != nil || len(s.queue) > 0
	done := s.turnDone
	s.mu.Unlock()
	if !busy {
		return true, nil
	}
	timer := time.NewTimer(max)
	defer timer.Stop()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			// The outcome is recorded just before the job ends: let it.
			idleCtx, cancel := context.WithTimeout(ctx, time.Second)
			s.waitIdle(idleCtx)
			cancel()
			return true, nil
		case <-timer.C:
			return false, nil
		case <-tick.C:
			s.mu.Lock()
			ev := s.act.events(1)
			s.mu.Unlock()
			msg := "waiting for the turn"
			if len(ev) == 1 && ev[0].Summary != "" {
				msg = "waiting: " + Clip(ev[0].Summary, 80)
			}
			if progress != nil {
				progress(msg)
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// recordEvent keeps what an event says (act, its translation; typ, its
// type) in the session's activity and returns the session's agent_id and
// identity as JSON strings (encoded once for all its events) for passing
// it on.
func (s *Session) recordEvent(typ, thread string, act backend.Activity) IDs {
	if act.Kind == backend.ActivityTokens || act.Model != "" {
		defer s.usageChanged() // kept in the record, the budgets looked at (usagesaved.go)
	}
	s.mu.Lock()
	had := len(s.act.messages)
	s.act.record(typ, thread, act, s.m.now())
	first := had == 0 && len(s.act.messages) > 0
	if s.ids.AgentID == nil || s.idsFor != [2]string{s.rec.AgentID, s.rec.Identity} {
		s.idsFor = [2]string{s.rec.AgentID, s.rec.Identity}
		s.ids = IDs{jsonrpcframe.AppendString(nil, s.rec.AgentID), jsonrpcframe.AppendString(nil, s.rec.Identity)}
	}
	ids := s.ids
	s.mu.Unlock()
	if first {
		s.m.cfg.changed() // its first message: a transcript to show
	}
	return ids
}
