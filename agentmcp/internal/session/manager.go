package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Manager owns the sessions of one proxy: it creates, finds, resumes and
// closes them, and runs their turns on the backend of each one's agent
// kind (Catalogue). See doc.go for the lock order and the goroutines.
type Manager struct {
	cfg     Config
	cat     *Catalogue
	absent  *Absent // what became of the agent_ids it does not hold
	log     *slog.Logger
	now     func() time.Time
	persist *persister
	ctx     context.Context // ends at Stop: every job and approval ends with it
	cancel  context.CancelFunc
	wg      sync.WaitGroup // running jobs and approval bridges
	ownGit  bool           // cfg.Git is the Manager's own: Stop closes it

	mu         sync.Mutex          // guards the fields below; never held across I/O
	byID       map[string]*Session // every session this process knows, by agent_id
	byIdentity map[string]*Session // live sessions by identity
	claiming   map[string]bool     // identities reserved by a Create or Rebind in progress
	closing    bool                // Shutdown has begun: no new sessions

	// resumed are the sessions Rebind made live that have run no turn
	// since, with their record from before: closing one gives it back its
	// status, without a summary turn (closeUnused).
	resumed resumedSet

	budgets *budgetWatch // the token budgets' watcher (budget.go)
}

// resumedSet is the Manager's resumed sessions that have run no turn yet,
// with the record each had before Rebind. mu is a leaf lock.
type resumedSet struct {
	mu     sync.Mutex
	before map[*Session]registry.Session
}

// add notes that Rebind made s live again, before being its record.
func (r *resumedSet) add(s *Session, before registry.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.before == nil {
		r.before = map[*Session]registry.Session{}
	}
	r.before[s] = before
}

// used notes that s runs a turn: a resumed session is used.
func (r *resumedSet) used(s *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.before, s)
}

// peek returns the record s had before Rebind made it live, when s has run
// no turn since; ok is false otherwise.
func (r *resumedSet) peek(s *Session) (before registry.Session, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before, ok = r.before[s]
	return before, ok
}

// take is peek, and forgets s.
func (r *resumedSet) take(s *Session) (before registry.Session, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before, ok = r.before[s]
	delete(r.before, s)
	return before, ok
}

// NewManager returns a Manager holding the registry's sessions (dropping
// the finished ones when Config.PersistThreads is false).
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Backends[registry.DefaultKind] == nil || cfg.Registry == nil {
		return nil, errors.New("session: Config.Backends (with the default kind's) and Config.Registry are required")
	}
	cfg.setDefaults()
	m := &Manager{cfg: cfg, log: cfg.Logger, now: cfg.Now, byID: map[string]*Session{}, byIdentity: map[string]*Session{},
		claiming: map[string]bool{}}
	if m.cfg.Git == nil {
		m.cfg.Git, m.ownGit = gitctx.New(gitctx.Config{Logger: cfg.Logger}), true
	}
	m.cat = &Catalogue{cfg: &m.cfg}
	m.absent = &Absent{cfg: &m.cfg, log: cfg.Logger, held: func(id string) bool { return m.Get(id) != nil }}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.persist = newPersister(cfg.Registry, cfg.Logger)
	m.budgets = newBudgetWatch(m)
	m.wg.Add(1)
	go m.budgets.run()
	for _, rec := range cfg.Registry.List(registry.Filter{}) {
		if !cfg.PersistThreads && !rec.Status.Live() {
			if err := cfg.Registry.Remove(rec.AgentID); err != nil {
				m.log.Warn("cannot drop an old session", "agent_id", rec.AgentID, "err", err)
			}
			continue
		}
		m.byID[rec.AgentID] = m.newSession(rec)
	}
	return m, nil
}

// CreateRequest describes a new session.
type CreateRequest struct {
	Identity  string
	Cwd       string // an existing directory (Catalogue.ResolveCwd)
	Tag       string
	Role      string
	AgentFile string
	// Agent is the session's agent kind, a key of Config.Backends.
	// It is recorded (registry.Session.Backend) and chooses the backend of
	// every turn of the session. optional: "" means the default kind.
	Agent string
	// Settings are the thread settings: the kind's defaults after the
	// role preset (Catalogue.Defaults) with the caller's arguments, and
	// only settings the kind takes (Catalogue.Check).
	Settings ThreadSettings
	// AutoMail overrides the configured auto-mail switch. optional.
	AutoMail *bool
	// Isolation is IsolationWorktree for a session of its own place
	// (Config.Places, made before anything is recorded), else
	// IsolationNone (or ""): the session works in Cwd. optional.
	Isolation string
	// Base is the revision an isolated session's place starts from.
	// optional: "" means the HEAD of Cwd's checkout.
	Base string
	// StartHead is, for a session without isolation, the commit its cwd's
	// checkout is at now: recorded (registry.Session.StartHead), its
	// change is read against it. optional.
	StartHead string
	// Host is the host the session's agent runs on, one of Config.Hosts
	// (hosts.go): Cwd is a directory there (Catalogue.ResolveCwd). optional: ""
	// means this machine.
	Host string
}

// Create binds r.Identity to a new session of agent kind r.Agent: the
// kind must be configured and the settings fit for it, its agent up (or
// come up by itself, see availability), then in-process uniqueness, the
// session limit, then the cross-process claim through the registry. The
// identity is reserved while the registry is written and the git facts
// read, without holding the manager's lock.
func (m *Manager) Create(ctx context.Context, r CreateRequest) (*Session, error) {
	kind := firstNonEmpty(r.Agent, m.cat.Default())
	if err := m.cat.check(kind, r.Settings); err != nil {
		return nil, err // a kind not configured, or settings it does not take (agents.go)
	}
	if err := m.cat.CheckSettings(r.Role, r.Settings); err != nil {
		return nil, err // the operator's sandbox policy (policy.go)
	}
	if err := m.cat.checkHost(kind, r.Host); err != nil {
		return nil, err // a host not configured, or one the kind cannot run on (hosts.go)
	}
	if err := backend.Unavailable(m.cat.backendAt(kind, r.Host)); err != nil {
		return nil, err // its agent is down: nothing is written (recovery.go)
	}
	if err := m.reserve(r.Identity, nil); err != nil {
		return nil, err
	}
	unclaim := func() {
		m.mu.Lock()
		delete(m.claiming, r.Identity)
		m.mu.Unlock()
	}
	var agentID string
	if r.Isolation == IsolationWorktree {
		agentID = registry.NewAgentIDFor(kind) // the place's owner, before the record
	}
	place, err := m.cfg.takePlace(ctx, r, agentID) // place.go: nothing recorded before it
	if err != nil {
		unclaim()
		return nil, err
	}
	cwd := r.Cwd
	var wt *registry.Worktree
	if place != nil {
		cwd, wt = place.Cwd, place.record()
	}
	facts := m.cat.facts(ctx, r.Host, cwd, gitctx.Facts{})
	rec, err := m.cfg.Registry.Add(registry.Session{
		AgentID: agentID, Backend: kind, Identity: r.Identity, Cwd: cwd, RepoRoot: deref(facts.Root), RepoName: deref(facts.Name), Branch: deref(facts.Branch),
		Status: registry.StatusBusy, ThreadState: registry.ThreadBusy, Tag: r.Tag, Role: r.Role, AgentSource: r.AgentFile, Worktree: wt,
		StartHead: r.StartHead, Host: r.Host,
	})
	if err != nil {
		if place != nil {
			if _, rerr := m.cfg.Places.Release(context.WithoutCancel(ctx), place, false); rerr != nil {
				m.log.Warn("cannot release the worktree of a session that was not recorded", "path", place.Path, "err", rerr)
			}
		}
		unclaim()
		return nil, claimError(r.Identity, err)
	}
	s := m.newSession(rec)
	s.place = place
	s.params = r.Settings
	s.autoMail = autoMailFor(&m.cfg, r.Identity)
	if r.AutoMail != nil {
		s.autoMail = *r.AutoMail
	}
	m.mu.Lock()
	delete(m.claiming, r.Identity)
	m.byID[rec.AgentID] = s
	m.byIdentity[r.Identity] = s
	m.mu.Unlock()
	s.bindMail()
	m.log.Info("session started", "agent_id", rec.AgentID, "identity", r.Identity, "agent", kind, "cwd", cwd, "host", r.Host)
	s.changed()
	m.cfg.changed()
	return s, nil
}

// reserve claims identity for s (nil for a new session) in this process:
// not shutting down, not held by another live session or claim, within the
// session limit.
func (m *Manager) reserve(identity string, s *Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return proxyerr.New(proxyerr.ErrInvalidSessionParams, nil, "the proxy is shutting down")
	}
	other := m.byIdentity[identity]
	if other != nil && other != s || m.claiming[identity] {
		var id string
		if other != nil {
			id = other.Record().AgentID
		}
		msg := fmt.Sprintf("identity conflict: %q is already bound to agent_id %q", identity, id)
		if s != nil {
			msg += "; close it before resuming " + s.Record().AgentID
		}
		return proxyerr.New(proxyerr.ErrIdentityConflict, map[string]any{"identity": identity, "conflicting_agent_id": id}, "%s", msg)
	}
	if n := len(m.byIdentity) + len(m.claiming); n >= m.cfg.MaxSessions {
		if s != nil {
			return proxyerr.New(proxyerr.ErrMaxSessionsExceeded, map[string]any{"max_concurrent_threads": m.cfg.MaxSessions, "active": n},
				"max_concurrent_threads (%d) reached", m.cfg.MaxSessions)
		}
		return proxyerr.New(proxyerr.ErrMaxSessionsExceeded, map[string]any{"max_concurrent_threads": m.cfg.MaxSessions, "active": n},
			"max_concurrent_threads (%d) reached: close a session with agent_close first", m.cfg.MaxSessions)
	}
	m.claiming[identity] = true
	return nil
}

// claimError turns a registry claim failure into IDENTITY_CONFLICT.
func claimError(identity string, err error) error {
	var ce *registry.ConflictError
	if errors.As(err, &ce) {
		if ce.Identity != identity {
			// The instance identity of a registry that claims it at its
			// first session (a team without config.json): another serve
			// of the same name recorded a session first.
			return proxyerr.New(proxyerr.ErrIdentityConflict, map[string]any{"identity": ce.Identity, "holder_pid": ce.HolderPID, "instance": true},
				"identity conflict: this serve's own identity %q is held by another process (pid %d): another serve runs as %q in this team; start this one with another --identity",
				ce.Identity, ce.HolderPID, ce.Identity)
		}
		data := map[string]any{"identity": identity, "holder_pid": ce.HolderPID}
		var with string
		if ce.HolderAgentID != "" {
			data["conflicting_agent_id"] = ce.HolderAgentID
			with = ", agent_id " + ce.HolderAgentID
		}
		return proxyerr.New(proxyerr.ErrIdentityConflict, data, "identity conflict: %q is held by another process (pid %d%s)",
			identity, ce.HolderPID, with)
	}
	return proxyerr.New(proxyerr.ErrInternal, nil, "%v", err)
}

// Rebind makes a session that is not live live again (resume): identity
// uniqueness in process, the session limit, the cross-process claim. Its
// next turn continues its thread where the backend can (continuity.go);
// its saved summary (else its last result) is the seed of a new thread
// where it cannot, and that turn's result says which (ThreadNote). A live
// session is left as it is.
func (m *Manager) Rebind(s *Session, src Source) error {
	rec := s.Record()
	if rec.Status.Live() {
		return nil
	}
	if err := m.reserve(rec.Identity, s); err != nil {
		return err
	}
	unclaim := func() {
		m.mu.Lock()
		delete(m.claiming, rec.Identity)
		m.mu.Unlock()
	}
	place, err := s.reenterPlace(m.ctx, rec) // its own worktree again (place.go)
	if err != nil {
		unclaim()
		return err
	}
	updated, err := m.cfg.Registry.Update(rec.AgentID, func(x *registry.Session) {
		x.Status = registry.StatusIdle
		x.ThreadState = registry.ThreadIdle
		x.HandedTo = "" // taken up: the hand-over is done
		if place != nil {
			x.Worktree, x.Cwd = place.record(), place.Cwd
		}
	})
	if err != nil {
		if place != nil {
			if _, rerr := m.cfg.Places.Release(m.ctx, place, true); rerr != nil {
				m.log.Warn("cannot let go of the worktree of a session that was not resumed", "path", place.Path, "err", rerr)
			}
		}
		unclaim()
		return claimError(rec.Identity, err)
	}
	seed, seedWhat := resumeSeed(m.cfg.Registry, m.log, updated)
	settings, _ := m.cat.Defaults(updated.Kind(), updated.Role)
	s.mu.Lock()
	updated.Turns = max(updated.Turns, s.rec.Turns)
	s.keepUsageLocked(&updated)
	s.rec = updated
	if seed != "" || s.seed == "" {
		s.seed, s.seedWhat = seed, seedWhat
	}
	s.resumed = &resumeMark{}
	if place != nil {
		s.place, s.released = place, nil
		s.cache = turnCache{} // its context and parameters name the place
	}
	if m.cat.TakesDefaults(updated.Kind()) && s.params.Model == "" && s.params.Sandbox == "" && s.params.ApprovalPolicy == "" {
		// the defaults and role presets are the default kind's (agents.go)
		s.params = settings
		s.paramsGen++
	}
	s.autoMail = autoMailFor(&m.cfg, updated.Identity)
	s.mu.Unlock()
	m.resumed.add(s, rec) // before it is live: its first turn finds it
	m.mu.Lock()
	delete(m.claiming, rec.Identity)
	m.byIdentity[rec.Identity] = s
	m.mu.Unlock()
	s.bindMail()
	m.cfg.Audit.Session("session_resumed", updated, fmt.Sprintf("by %s; thread %s; if it cannot be continued, a new one is given: %s",
		src, firstNonEmpty(updated.BackendID, "none"), firstNonEmpty(seedWhat, "nothing")))
	s.changed()
	return nil
}

// bindMail tells the mail layer that s holds its identity.
func (s *Session) bindMail() {
	if s.m.cfg.Mail == nil {
		return
	}
	s.mu.Lock()
	identity, on := s.rec.Identity, s.autoMail
	s.mu.Unlock()
	s.m.cfg.Mail.Bind(identity, on)
}

// autoMailFor is the configured auto-mail switch for an identity.
func autoMailFor(cfg *Config, identity string) bool {
	if cfg.AutoMailFor != nil {
		return cfg.AutoMailFor(identity)
	}
	return cfg.AutoMail
}

// Get returns the session of agentID, or nil.
func (m *Manager) Get(agentID string) *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[agentID]
}

// ByIdentity returns the live session holding identity, or nil.
func (m *Manager) ByIdentity(identity string) *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byIdentity[identity]
}

// ByThread returns the session bound to a thread id (a live one before a
// finished one), or nil.
func (m *Manager) ByThread(threadID string) *Session {
	var found *Session
	for _, s := range m.all() {
		rec := s.Record()
		if rec.BackendID == threadID && (found == nil || rec.Status.Live()) {
			found = s
		}
	}
	return found
}

func (m *Manager) all() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := make([]*Session, 0, len(m.byID))
	for _, s := range m.byID {
		all = append(all, s)
	}
	return all
}

// Sessions returns every known session, live ones first, then by last
// activity (newest first), then by agent_id.
func (m *Manager) Sessions() []*Session {
	all := m.all()
	recs := make(map[*Session]registry.Session, len(all))
	for _, s := range all {
		recs[s] = s.Record()
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := recs[all[i]], recs[all[j]]
		if a.Status.Live() != b.Status.Live() {
			return a.Status.Live()
		}
		if !a.LastActive.Equal(b.LastActive) {
			return a.LastActive.After(b.LastActive)
		}
		return a.AgentID < b.AgentID
	})
	return all
}

// Live returns the live sessions by identity.
func (m *Manager) Live() map[string]*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := make(map[string]*Session, len(m.byIdentity))
	for id, s := range m.byIdentity {
		live[id] = s
	}
	return live
}

// Closing reports whether Shutdown has begun.
func (m *Manager) Closing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closing
}

// AnonymousReply runs a turn on a thread no session has (codex-reply with
// an unknown threadId): the prompt goes to the default kind's backend as
// it is, without context; its agent decides whether the thread exists.
func (m *Manager) AnonymousReply(ctx context.Context, call CallRef, threadID, prompt string) (*TurnResult, error) {
	kind := m.cat.Default()
	b := m.cat.backend(kind)
	if err := backend.Unavailable(b); err != nil {
		return nil, err // its agent is down: nothing audited (recovery.go)
	}
	m.cfg.Audit.Append(registry.Entry{Event: "turn:claude", Summary: prompt, Outcome: "forwarded (thread " + threadID + " has no session)"})
	res, err := b.Turn(ctx, backend.TurnRequest{
		ThreadID: threadID, Prompt: prompt, Timeout: m.cfg.RequestTimeout, SameThread: true,
		Handler: &turnHandler{m: m, call: call},
	})
	if err != nil {
		var te *backend.TimeoutError
		if errors.As(err, &te) {
			return nil, proxyerr.New(proxyerr.ErrRequestTimeout, map[string]any{"threadId": threadID, "partial": te.Partial}, "%s turn timed out after %s", kind, te.After)
		}
		return nil, BackendError(kind, err)
	}
	return &TurnResult{ThreadID: firstNonEmpty(res.ThreadID, threadID), Text: res.Text, IsError: res.IsError,
		Status: firstNonEmpty(res.Status, "completed")}, nil
}
