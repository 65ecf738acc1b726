package proxy

import (
	"context"
	"sync"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Session states (FR-17).
const (
	stateBusy   = registry.ThreadBusy
	stateIdle   = registry.ThreadIdle
	stateClosed = registry.ThreadClosed
)

// turnSource says who asked for a turn; it orders the per-session queue:
// close > cancel > Claude > auto-mail (FR-17.11).
type turnSource int

const (
	sourceClaude turnSource = iota
	sourceResume
	sourceMail
	sourceSummary
)

func (s turnSource) String() string {
	switch s {
	case sourceClaude:
		return "claude"
	case sourceResume:
		return "resume"
	case sourceMail:
		return "auto-mail"
	case sourceSummary:
		return "summary"
	}
	return "unknown"
}

// job is one queued turn. run executes it with the session marked busy
// and may return a function to call once the session has moved on (idle,
// or its next job started): the answer to the client, which therefore never
// arrives before the session state it implies. discard fails the job when
// the session closes before it ran.
type job struct {
	source  turnSource
	run     func(ctx context.Context) (after func())
	discard func(err error)
	early   *earlyAnswer // optional: the job may be finished on the Codex reader
	// router, when set, is the router submitting the job: started at once,
	// the job runs on its goroutine (see router).
	router *router
}

// session is one Codex agent session. Its queue enforces the single-flight
// rule (FR-8.9): one turn in flight from any source; Claude's requests wait in
// FIFO order and always go before auto-mail, which is only started when the
// session is idle with nothing queued.
type session struct {
	srv *Server

	mu         sync.Mutex
	rec        registry.Session
	queue      []*job
	running    *job
	runCancel  context.CancelFunc
	closing    bool
	tainted    bool // mcp-server: the thread was cancelled; prefer a fresh thread
	autoMail   bool
	params     threadSettings
	lastResult string
	resumeNote string // summary to prepend on the next turn (FR-6, FR-16.3)
	idleCh     chan struct{}
	turns      int
	counters   sessionCounters
	approvals  map[string]*pendingApproval
	act        activity
	last       *turnOutcome  // how the last turn ended (agent_status, agent_wait)
	fullResult string        // the last result's text before the result cap
	turnDone   chan struct{} // closed (and replaced) whenever a turn ends
	quotedFor  [2]string     // the agent_id and identity quotedIDs encode
	quotedIDs  quotedIDs
	blockKey   [7]string // what block was rendered from
	block      string    // the last <session-context> block
}

// contextBlock returns sc's <session-context> block, rendered again only
// when something in it changed since the session's last turn.
func (s *session) contextBlock(sc sessionContext) string {
	key := [...]string{sc.AgentID, sc.Identity, sc.Team, sc.Cwd, orNull(sc.Repo.Root), orNull(sc.Repo.Name), orNull(sc.Repo.Branch)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blockKey != key || s.block == "" {
		s.blockKey, s.block = key, sc.contextBlock()
	}
	return s.block
}

// recordEvent keeps what the event says in the session's activity.
func (s *session) recordEvent(e codexchild.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.act.record(e, s.srv.now())
}

// threadSettings are the Codex parameters the session was started with,
// reused when a thread has to be started again (resume on mcp-server).
type threadSettings struct {
	Model                 string
	ReasoningEffort       string
	Sandbox               string
	ApprovalPolicy        string
	BaseInstructions      string
	DeveloperInstructions string
	CompactPrompt         string
	Profile               string
	Config                map[string]any
}

// submit queues a job; it runs at once when the session is idle. It fails
// with ErrSessionClosed when the session is closed or closing.
func (s *session) submit(j *job) error {
	s.mu.Lock()
	if s.closing || s.rec.ThreadState == stateClosed {
		s.mu.Unlock()
		return newError(ErrSessionClosed, map[string]any{"agent_id": s.rec.AgentID}, "session %s is closed", s.rec.AgentID)
	}
	if s.running != nil {
		// Claude's requests keep FIFO order among themselves and go before
		// any queued auto-mail.
		i := len(s.queue)
		if j.source != sourceMail {
			for i > 0 && s.queue[i-1].source == sourceMail {
				i--
			}
		}
		s.queue = append(s.queue, nil)
		copy(s.queue[i+1:], s.queue[i:])
		s.queue[i] = j
		s.mu.Unlock()
		return nil
	}
	run := s.startLocked(j, j.router)
	s.mu.Unlock()
	if j.router != nil {
		run()
	} else {
		go run()
	}
	return nil
}

// tryMail starts an auto-mail job only if the session is idle with nothing
// queued (FR-8.10, FR-17.6). It reports whether the job was started.
func (s *session) tryMail(j *job) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.rec.ThreadState != stateIdle || s.running != nil || len(s.queue) > 0 || !s.autoMail {
		return false
	}
	go s.startLocked(j, nil)()
	return true
}

// startLocked makes j the running job and returns the function that runs
// it, for the caller to call on a goroutine of its own or, with rt, on the
// router's (the job's context tells the turn so); s.mu is held.
func (s *session) startLocked(j *job, rt *router) (run func()) {
	ctx, cancel := context.WithCancel(s.srv.ctx)
	s.running, s.runCancel = j, cancel
	s.setStateLocked(stateBusy)
	s.srv.persistAsync(s)
	s.srv.wg.Add(1)
	if rt != nil {
		ctx = context.WithValue(ctx, routerKey{}, rt)
	}
	return func() {
		defer s.srv.wg.Done()
		defer cancel()
		after := j.run(ctx)
		var idle bool
		if e := j.early; e != nil && e.answered.Load() {
			idle = e.idle // finished and answered on the Codex reader
		} else {
			idle = s.finish(j)
			if after != nil {
				after()
			}
		}
		if idle {
			s.srv.sessionIdle(s) // the mail check, after the answer is out
		}
	}
}

// finish runs after a job: the next Claude job starts, else the session
// becomes idle; it reports whether the mail layer should be told.
func (s *session) finish(j *job) bool {
	s.mu.Lock()
	if s.running == j {
		s.running, s.runCancel = nil, nil
	}
	if s.closing || s.rec.ThreadState == stateClosed {
		idle := s.idleCh
		s.idleCh = make(chan struct{})
		s.mu.Unlock()
		close(idle)
		return false
	}
	if len(s.queue) > 0 {
		next := s.queue[0]
		s.queue = s.queue[1:]
		go s.startLocked(next, nil)()
		s.mu.Unlock()
		return false
	}
	s.setStateLocked(stateIdle)
	s.srv.persistAsync(s)
	idle := s.idleCh
	s.idleCh = make(chan struct{})
	s.mu.Unlock()
	close(idle)
	return true
}

// setStateLocked records a state change; s.mu is held.
func (s *session) setStateLocked(state registry.ThreadState) {
	s.rec.ThreadState = state
	switch state {
	case stateBusy:
		s.rec.Status = registry.StatusBusy
	case stateIdle:
		s.rec.Status = registry.StatusIdle
	}
	s.rec.LastActive = s.srv.now()
}

// snapshot returns a copy of the session's record.
func (s *session) snapshot() registry.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// agentID returns the session's agent_id.
func (s *session) agentID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.AgentID
}

// identity returns the session's identity.
func (s *session) identity() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.Identity
}

// waitIdle blocks until the session is idle or closed, or ctx ends.
func (s *session) waitIdle(ctx context.Context) bool {
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
