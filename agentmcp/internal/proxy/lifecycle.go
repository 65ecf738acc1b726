package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/atm-agent-mcp/atm-agent-mcp/mailbridge"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Server is the MCP proxy: one upstream MCP connection, one Codex child,
// many sessions. Create it with New and run it with Run.
//
// Design notes: the read loop (serveLoop) only routes; anything that waits
// on Codex, on files or on the client runs on a goroutine tracked by wg.
// Each session owns a queue that serialises its turns. Busy/idle changes are
// persisted by one persister goroutine (latest state per session,
// coalesced), so no turn waits for an fsync; a crash can lose only the last
// busy/idle flip, which the next start marks stale anyway. Session creation,
// close and resume persist synchronously (they claim and release
// identities), and so does a new Codex thread id (resume needs it).
type Server struct {
	opts     Options
	log      *slog.Logger
	client   *client
	backend  backendT
	reg      *registry.Registry
	audit    *registry.Audit
	atm      *atmclient.Client
	atmTools *atmTools
	mail     *mailbridge.Bridge
	started  time.Time
	now      func() time.Time

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	inflight map[jsonrpcframe.ID]context.CancelFunc
	closing  bool
	wg       sync.WaitGroup

	toolsOnce sync.Once
	toolsList []byte

	smu          sync.Mutex
	sessions     map[string]*session // every session this process knows, by agent_id
	byIdentity   map[string]*session // live sessions by identity
	knownThreads map[string]bool     // Codex threads this child has seen

	persistMu    sync.Mutex
	persistQ     map[*session]struct{}
	persistWrite sync.Mutex
	persistWake  chan struct{}
	persistDone  chan struct{}

	routers routerPool // goroutines for the router role, kept between turns
}

// New opens the instance registry (claiming the instance identity) and the
// audit log, and returns a Server ready to Run. It fails with a
// *registry.ConflictError when another live process holds the identity.
func New(opts Options) (*Server, error) {
	if opts.Backend == nil {
		return nil, errors.New("proxy: no codex backend")
	}
	if opts.DefaultIdentity == "" {
		opts.DefaultIdentity = "codex"
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 300 * time.Second
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 10
	}
	if opts.ElicitationTimeout <= 0 {
		opts.ElicitationTimeout = 300 * time.Second
	}
	if opts.SummaryTimeout <= 0 {
		opts.SummaryTimeout = 10 * time.Second
	}
	if opts.ApprovalFallback == "" {
		opts.ApprovalFallback = "deny"
	}
	if opts.Cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			opts.Cwd = wd
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	for kind, name := range map[string]string{"team": opts.Team, "identity": opts.Identity, "default identity": opts.DefaultIdentity} {
		if err := atmclient.ValidateName(kind, name); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	reg, err := registry.Open(registry.Config{Home: opts.Home, Team: opts.Team, Identity: opts.Identity, Logger: log, Now: now})
	if err != nil {
		return nil, err
	}
	audit, err := reg.Dir().OpenAudit(registry.AuditConfig{Now: now})
	if err != nil {
		reg.Close()
		return nil, err
	}
	atm, err := atmclient.New(atmclient.Config{Home: opts.Home, Logger: log})
	if err != nil {
		audit.Close()
		reg.Close()
		return nil, err
	}
	s := &Server{
		opts:         opts,
		log:          log.With("component", "proxy", "team", opts.Team, "instance", opts.Identity),
		backend:      opts.Backend,
		reg:          reg,
		audit:        audit,
		atm:          atm,
		now:          now,
		inflight:     map[jsonrpcframe.ID]context.CancelFunc{},
		sessions:     map[string]*session{},
		byIdentity:   map[string]*session{},
		knownThreads: map[string]bool{},
		persistQ:     map[*session]struct{}{},
		persistWake:  make(chan struct{}, 1),
		persistDone:  make(chan struct{}),
	}
	s.atmTools = &atmTools{atm: atm, team: opts.Team, sender: s.sender, audit: s.auditATM, extraArgs: []string{"agent_id", "identity"}}
	for _, rec := range reg.List(registry.Filter{}) {
		if !opts.PersistThreads && !rec.Status.Live() {
			// persist_threads = false: nothing is kept for resume.
			if err := reg.Remove(rec.AgentID); err != nil {
				s.log.Warn("cannot drop an old session", "agent_id", rec.AgentID, "err", err)
			}
			continue
		}
		s.sessions[rec.AgentID] = s.newSession(rec)
	}
	return s, nil
}

// Run serves the MCP client on r/w until the client closes stdin or ctx is
// cancelled (SIGTERM/SIGINT), then shuts down gracefully (FR-7): summaries,
// registry, identities, child. It returns nil after a graceful shutdown.
func (s *Server) Run(ctx context.Context, r io.Reader, w io.Writer) error {
	gauge := newPipeGauge(w)
	if gauge != nil {
		w = gauge
	}
	if f, ok := r.(*os.File); ok {
		r = jsonrpcframe.PipeReader(f) // raw reads where the pipe allows them
	}
	reader, writer := jsonrpcframe.NewAuto(r, w, nil)
	s.started = s.now()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.client = newClient(writer, gauge, s.opts.EventQueue, s.log)
	go s.persister()
	if err := s.startMail(); err != nil {
		s.log.Error("mail delivery disabled", "err", err)
	}

	readErr := make(chan error, 1)
	rt := &router{s: s, r: reader, done: readErr}
	go rt.serve()
	var err error
	select {
	case err = <-readErr:
	case <-ctx.Done():
		s.log.Info("shutdown requested")
	}
	s.shutdown()
	return err
}

// newSession wraps a registry record; the session is not started.
func (s *Server) newSession(rec registry.Session) *session {
	return &session{srv: s, rec: rec, autoMail: true, idleCh: make(chan struct{}), turnDone: make(chan struct{}),
		act: activity{size: s.opts.EventRing}}
}

// persistAsync queues the session for the persister, which writes its
// current state (not a copy taken now, so a later flush never writes an
// older state over a newer one).
func (s *Server) persistAsync(sess *session) {
	s.persistMu.Lock()
	s.persistQ[sess] = struct{}{}
	s.persistMu.Unlock()
	select {
	case s.persistWake <- struct{}{}:
	default:
	}
}

// persistDebounce is how long the persister gathers changes before writing.
const persistDebounce = 100 * time.Millisecond

// persister writes queued sessions until the server's context ends, then
// flushes what is left.
func (s *Server) persister() {
	defer close(s.persistDone)
	for {
		select {
		case <-s.persistWake:
			// Coalesce: a turn's busy and idle flips within the window
			// cost one write, not two fsyncs on the request path's CPU.
			select {
			case <-time.After(persistDebounce):
			case <-s.ctx.Done():
			}
			s.flushPersist()
		case <-s.ctx.Done():
			s.flushPersist()
			return
		}
	}
}

// flushPersist writes every queued session.
func (s *Server) flushPersist() {
	s.persistMu.Lock()
	q := s.persistQ
	s.persistQ = map[*session]struct{}{}
	s.persistMu.Unlock()
	for sess := range q {
		s.persistNow(sess)
	}
}

// persistNow writes the session's current state: thread state, backend id,
// repository facts and activity. Identity-binding changes (create, close,
// resume) are not made here; they persist synchronously where they happen.
// Writes of one session are serialised so that an older state never lands
// after a newer one.
func (s *Server) persistNow(sess *session) {
	s.persistWrite.Lock()
	defer s.persistWrite.Unlock()
	rec := sess.snapshot()
	_, err := s.reg.Update(rec.AgentID, func(x *registry.Session) {
		if !x.Status.Live() {
			return // closed meanwhile: the close wrote the final state
		}
		x.BackendID = rec.BackendID
		x.ThreadState = rec.ThreadState
		x.RepoRoot, x.RepoName, x.Branch, x.Cwd = rec.RepoRoot, rec.RepoName, rec.Branch, rec.Cwd
		x.LastActive = rec.LastActive
		x.Extra = rec.Extra
		switch rec.ThreadState {
		case registry.ThreadBusy:
			x.Status = registry.StatusBusy
		case registry.ThreadIdle:
			x.Status = registry.StatusIdle
		}
	})
	if err != nil && !errors.Is(err, registry.ErrClosed) && !errors.Is(err, registry.ErrSessionNotFound) {
		s.log.Error("cannot persist session", "agent_id", rec.AgentID, "err", err)
	}
}

// sessionIdle is called when a session becomes idle: the mail layer's
// post-turn check (FR-8.1).
func (s *Server) sessionIdle(sess *session) {
	if s.mail != nil {
		s.mail.Idle(sess.identity())
	}
}
