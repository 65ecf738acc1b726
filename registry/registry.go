package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

var (
	// ErrSessionNotFound is returned for an agent_id the registry does not
	// hold. The proxy maps it to -32002 SESSION_NOT_FOUND.
	ErrSessionNotFound = errors.New("session not found")
	// ErrSessionExists is returned when adding an agent_id already present.
	ErrSessionExists = errors.New("session already exists")
	// ErrClosed is returned by every method of a closed Registry.
	ErrClosed = errors.New("registry closed")
)

// Config configures [Open].
type Config struct {
	// Home is the ATM home directory. Optional: "" means atmclient.Home().
	Home string
	// Team is the team name. Required.
	Team string
	// Identity is the proxy instance's identity; it names the registry
	// directory and is claimed for as long as the Registry is open. Required.
	Identity string
	// Logger receives warnings (stale sessions, a corrupt file moved
	// aside). Optional: nil means discard.
	Logger *slog.Logger
	// Now returns the current time. Optional: nil means time.Now.
	Now func() time.Time
	// Deferred makes Open create nothing for an instance that has no
	// directory yet: it neither creates {team}/{identity} nor claims the
	// instance identity, and the registry starts empty. The first
	// [Registry.Add] or [Registry.Adopt] claims the identity (failing with
	// a [*ConflictError] while another process holds it), creates the
	// directory and loads whatever registry file appeared meanwhile. It is
	// for a team that may be a typo, which then leaves nothing on disk until
	// a session is recorded. An instance whose directory exists is claimed
	// at Open either way. Optional: false claims at Open.
	Deferred bool
}

// Registry is the session registry of one proxy instance, persisted at
// {team}/{identity}/registry.json. All methods are safe for concurrent use.
// Methods return copies; changing a returned Session changes nothing until
// it is passed back through Update.
type Registry struct {
	dir      Dir
	identity string
	path     string
	log      *slog.Logger
	now      func() time.Time

	mu     sync.Mutex
	closed bool
	// instance is the instance identity's claim; nil while a Deferred
	// registry has not claimed it yet (and then sessions is empty).
	instance *Claim
	sessions []Session
	extra    map[string]json.RawMessage
	// bound maps each identity held by a live session to its binding.
	bound map[string]binding
	// encoded caches each session's rendering in the file by agent_id, so a
	// persist re-encodes only what changed. A change to a session must
	// delete its entry.
	encoded map[string][]byte
}

// binding is an identity held by a live session. claim is nil when the
// session shares the instance's own claim.
type binding struct {
	agentID string
	claim   *Claim
	since   time.Time
}

// Open claims the instance identity, loads the registry file and marks
// every session that was live in the previous process stale (with thread
// state closed), persisting that change. A missing file is an empty
// registry. A file that does not parse is renamed to
// registry.json.corrupt-{time} (kept for inspection), a warning is logged and
// the registry starts empty. Pending files left by a crash are removed. If
// the instance identity is held by another live process, Open fails with a
// [*ConflictError]. With Config.Deferred, an instance without a directory
// is claimed and loaded at its first change instead (see [Config]).
func Open(cfg Config) (*Registry, error) {
	dir, err := TeamDir(cfg.Home, cfg.Team)
	if err != nil {
		return nil, err
	}
	if err := validIdentity(cfg.Identity); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	r := &Registry{
		dir:      dir,
		identity: cfg.Identity,
		path:     dir.registryPath(cfg.Identity),
		log:      log.With("component", "registry", "team", cfg.Team, "instance", cfg.Identity),
		now:      now,
		bound:    make(map[string]binding),
		encoded:  make(map[string][]byte),
	}
	if cfg.Deferred {
		if _, err := os.Stat(dir.instanceDir(cfg.Identity)); errors.Is(err, fs.ErrNotExist) {
			r.log.Debug("registry deferred: nothing is created before the first session")
			return r, nil
		}
	}
	if err := r.claimInstanceLocked(); err != nil {
		return nil, fmt.Errorf("open registry: %w", err)
	}
	return r, nil
}

// claimInstanceLocked creates the instance directory, claims the instance
// identity and loads the file, unless the claim is held already. r.mu
// must be held (or r not yet shared).
func (r *Registry) claimInstanceLocked() error {
	if r.instance != nil {
		return nil
	}
	if err := os.MkdirAll(r.dir.instanceDir(r.identity), dirPerm); err != nil {
		return err
	}
	claim, err := r.dir.Claim(r.identity, "")
	if err != nil {
		return err
	}
	r.instance = claim
	if err := r.load(); err != nil {
		r.instance = nil
		r.sessions, r.extra = nil, nil
		clear(r.encoded)
		claim.Release()
		return err
	}
	return nil
}

// load reads the file and marks live sessions stale. It runs before the
// Registry is shared, with the instance claim held.
func (r *Registry) load() error {
	if err := removePending(filepath.Dir(r.path), registryFile); err != nil {
		r.log.Warn("cannot remove pending registry files", "err", err)
	}
	data, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := decodeFile(data)
	if errors.Is(err, ErrUnsupportedVersion) {
		return err
	}
	if err != nil {
		aside := r.path + ".corrupt-" + r.now().UTC().Format("20060102T150405.000000000Z")
		if rerr := os.Rename(r.path, aside); rerr != nil {
			return fmt.Errorf("registry %s does not parse (%v) and cannot be moved aside: %w", r.path, err, rerr)
		}
		r.log.Warn("registry file does not parse; moved aside, starting empty", "path", r.path, "moved_to", aside, "err", err)
		return nil
	}
	seen := make(map[string]bool, len(st.sessions))
	changed := false
	for _, s := range st.sessions {
		if seen[s.AgentID] {
			r.log.Warn("duplicate agent_id in registry file; keeping the first", "agent_id", s.AgentID)
			changed = true
			continue
		}
		seen[s.AgentID] = true
		if s.Status.Live() {
			r.log.Warn("session of a previous process marked stale", "agent_id", s.AgentID, "identity", s.Identity, "was", s.Status)
			s.Status = StatusStale
			s.ThreadState = ThreadClosed
			changed = true
		}
		r.sessions = append(r.sessions, s)
	}
	r.extra = st.extra
	if changed {
		return r.persistLocked()
	}
	return nil
}

// Path returns the registry file's path.
func (r *Registry) Path() string { return r.path }

// Identity returns the instance identity.
func (r *Registry) Identity() string { return r.identity }

// Dir returns the team directory the registry lives in.
func (r *Registry) Dir() Dir { return r.dir }

// persistLocked writes the registry file. r.mu must be held (or r not yet
// shared).
func (r *Registry) persistLocked() error {
	data, err := encodeFile(fileState{version: FormatVersion, sessions: r.sessions, extra: r.extra}, r.encodeCached)
	if err != nil {
		return fmt.Errorf("persist registry: %w", err)
	}
	if err := writeFileAtomic(r.path, data); err != nil {
		return fmt.Errorf("persist registry: %w", err)
	}
	return nil
}

// encodeCached is encodeSession through r.encoded.
func (r *Registry) encodeCached(s Session) ([]byte, error) {
	if b, ok := r.encoded[s.AgentID]; ok {
		return b, nil
	}
	b, err := encodeSession(s)
	if err == nil {
		r.encoded[s.AgentID] = b
	}
	return b, err
}

// Persist writes the registry file again. Every change already persists;
// Persist is for retrying after a failed write. A Deferred registry that
// has recorded nothing yet has nothing to write.
func (r *Registry) Persist() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.instance == nil {
		return nil
	}
	return r.persistLocked()
}

// index returns the position of agentID in r.sessions, or -1.
func (r *Registry) index(agentID string) int {
	return slices.IndexFunc(r.sessions, func(s Session) bool { return s.AgentID == agentID })
}

// claimLocked binds identity to agentID. It returns the binding to record
// and, for the caller's rollback, whether a new lock was taken.
func (r *Registry) claimLocked(identity, agentID string) (binding, error) {
	if b, ok := r.bound[identity]; ok && b.agentID != agentID {
		return binding{}, &ConflictError{Identity: identity, HolderPID: os.Getpid(), HolderAgentID: b.agentID, Since: b.since}
	}
	since := r.now().UTC()
	if identity == r.identity {
		r.log.Debug("session binds the instance identity", "identity", identity, "agent_id", agentID)
		return binding{agentID: agentID, since: since}, nil
	}
	c, err := r.dir.Claim(identity, agentID)
	if err != nil {
		return binding{}, err
	}
	r.log.Debug("identity claimed", "identity", identity, "agent_id", agentID)
	return binding{agentID: agentID, claim: c, since: since}, nil
}

// releaseLocked unbinds identity if agentID holds it.
func (r *Registry) releaseLocked(identity, agentID string) {
	b, ok := r.bound[identity]
	if !ok || b.agentID != agentID {
		return
	}
	delete(r.bound, identity)
	r.log.Debug("identity released", "identity", identity, "agent_id", agentID)
	if b.claim != nil {
		if err := b.claim.Release(); err != nil {
			r.log.Warn("cannot release identity", "identity", identity, "err", err)
		}
	}
}

// Add registers a new session and persists the registry. Defaults: Backend
// "codex", an empty AgentID a new one for the Backend ([NewAgentIDFor]),
// Team the registry's team, Status active, zero StartedAt and LastActive
// the current time. A live
// session claims its identity first; if that identity is bound elsewhere,
// Add fails with a [*ConflictError] and changes nothing. A Deferred
// registry claims its instance first (see [Config]). It returns the
// session as stored.
func (r *Registry) Add(s Session) (Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Session{}, ErrClosed
	}
	if err := r.claimInstanceLocked(); err != nil {
		return Session{}, fmt.Errorf("add session: %w", err)
	}
	s = s.clone()
	if s.Backend == "" {
		s.Backend = DefaultKind
	}
	if s.AgentID == "" {
		s.AgentID = NewAgentIDFor(s.Backend)
	}
	if s.Team == "" {
		s.Team = r.dir.team
	}
	if s.Status == "" {
		s.Status = StatusActive
	}
	now := r.now().UTC()
	if s.StartedAt.IsZero() {
		s.StartedAt = now
	}
	if s.LastActive.IsZero() {
		s.LastActive = now
	}
	s.StartedAt, s.LastActive = s.StartedAt.UTC(), s.LastActive.UTC()
	if err := r.validate(s); err != nil {
		return Session{}, fmt.Errorf("add session: %w", err)
	}
	if r.index(s.AgentID) >= 0 {
		return Session{}, fmt.Errorf("add session %s: %w", s.AgentID, ErrSessionExists)
	}
	var b binding
	if s.Status.Live() {
		var err error
		if b, err = r.claimLocked(s.Identity, s.AgentID); err != nil {
			return Session{}, fmt.Errorf("add session %s: %w", s.AgentID, err)
		}
	}
	r.sessions = append(r.sessions, s)
	delete(r.encoded, s.AgentID)
	if err := r.persistLocked(); err != nil {
		r.sessions = r.sessions[:len(r.sessions)-1]
		delete(r.encoded, s.AgentID)
		if b.claim != nil {
			b.claim.Release()
		}
		return Session{}, fmt.Errorf("add session %s: %w", s.AgentID, err)
	}
	if s.Status.Live() {
		r.bound[s.Identity] = b
	}
	return s.clone(), nil
}

// validate checks the names a session puts into paths.
func (r *Registry) validate(s Session) error {
	if err := ValidateAgentID(s.AgentID); err != nil {
		return err
	}
	if err := validIdentity(s.Identity); err != nil {
		return err
	}
	if s.BackendID != "" {
		if err := validBackendID(s.BackendID); err != nil {
			return err
		}
	}
	return nil
}

// Update changes the session agentID and persists the registry. LastActive
// is set to the current time before fn runs; fn may change any field but
// AgentID. Status changes claim and release the identity: a session that
// becomes live (a resumed stale or closed session, FR-17.7) claims it, one
// that stops being live releases it, and a live session that changes
// identity swaps them. If the claim conflicts or the write fails, nothing
// changes and the error is returned. It returns the session as stored.
func (r *Registry) Update(agentID string, fn func(*Session)) (Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Session{}, ErrClosed
	}
	return r.updateLocked(agentID, fn)
}

// updateLocked is Update with r.mu held.
func (r *Registry) updateLocked(agentID string, fn func(*Session)) (Session, error) {
	i := r.index(agentID)
	if i < 0 {
		return Session{}, fmt.Errorf("update session %s: %w", agentID, ErrSessionNotFound)
	}
	old := r.sessions[i]
	s := old.clone()
	s.LastActive = r.now().UTC()
	fn(&s)
	if s.AgentID != agentID {
		return Session{}, fmt.Errorf("update session %s: agent_id cannot change (to %q)", agentID, s.AgentID)
	}
	s.StartedAt, s.LastActive = s.StartedAt.UTC(), s.LastActive.UTC()
	if err := r.validate(s); err != nil {
		return Session{}, fmt.Errorf("update session %s: %w", agentID, err)
	}
	wasBound := old.Status.Live()
	nowBound := s.Status.Live()
	claimNew := nowBound && (!wasBound || s.Identity != old.Identity)
	releaseOld := wasBound && (!nowBound || s.Identity != old.Identity)
	var b binding
	if claimNew {
		var err error
		if b, err = r.claimLocked(s.Identity, agentID); err != nil {
			return Session{}, fmt.Errorf("update session %s: %w", agentID, err)
		}
	}
	r.sessions[i] = s
	delete(r.encoded, agentID)
	if err := r.persistLocked(); err != nil {
		r.sessions[i] = old
		delete(r.encoded, agentID)
		if b.claim != nil {
			b.claim.Release()
		}
		return Session{}, fmt.Errorf("update session %s: %w", agentID, err)
	}
	if releaseOld {
		r.releaseLocked(old.Identity, agentID)
	}
	if claimNew {
		r.bound[s.Identity] = b
	}
	return s.clone(), nil
}

// Finish ends several live sessions with one write of the registry (a
// proxy's shutdown, where every fsync counts): for each agent_id in fns,
// fn changes its record and must leave it not live (closed, interrupted,
// with the facts the proxy has), and its identity is released. A session
// that is not live any more is left as it is. An unknown agent_id, or an
// fn that leaves a session live or changes its agent_id or identity,
// changes nothing and fails. It returns the records as stored.
func (r *Registry) Finish(fns map[string]func(*Session)) (map[string]Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	before := slices.Clone(r.sessions)
	undo := func() {
		r.sessions = before
		for id := range fns {
			delete(r.encoded, id)
		}
	}
	out := make(map[string]Session, len(fns))
	var ended []Session
	for id, fn := range fns {
		i := r.index(id)
		if i < 0 {
			undo()
			return nil, fmt.Errorf("finish session %s: %w", id, ErrSessionNotFound)
		}
		old := r.sessions[i]
		if !old.Status.Live() {
			out[id] = old.clone()
			continue
		}
		s := old.clone()
		s.LastActive = r.now().UTC()
		fn(&s)
		s.StartedAt, s.LastActive = s.StartedAt.UTC(), s.LastActive.UTC()
		var err error
		switch {
		case s.AgentID != id || s.Identity != old.Identity:
			err = errors.New("agent_id and identity cannot change")
		case s.Status.Live():
			err = fmt.Errorf("status %q is live", s.Status)
		default:
			err = r.validate(s)
		}
		if err != nil {
			undo()
			return nil, fmt.Errorf("finish session %s: %w", id, err)
		}
		r.sessions[i] = s
		delete(r.encoded, id)
		ended = append(ended, old)
		out[id] = s.clone()
	}
	if len(ended) == 0 {
		return out, nil
	}
	if err := r.persistLocked(); err != nil {
		undo()
		return nil, fmt.Errorf("finish sessions: %w", err)
	}
	for _, old := range ended {
		r.releaseLocked(old.Identity, old.AgentID)
	}
	return out, nil
}

// CloseSession marks the session closed (status and thread state), releases
// its identity and persists. Closing a session that is not live is a no-op
// (FR-17.9); it returns the session either way.
func (r *Registry) CloseSession(agentID string) (Session, error) {
	return r.finish(agentID, StatusClosed)
}

// InterruptSession is CloseSession for a session closed without a summary
// (FR-7.2, FR-17.4): its status becomes interrupted.
func (r *Registry) InterruptSession(agentID string) (Session, error) {
	return r.finish(agentID, StatusInterrupted)
}

func (r *Registry) finish(agentID string, st Status) (Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Session{}, ErrClosed
	}
	if i := r.index(agentID); i >= 0 && !r.sessions[i].Status.Live() {
		return r.sessions[i].clone(), nil
	}
	return r.updateLocked(agentID, func(s *Session) {
		s.Status = st
		s.ThreadState = ThreadClosed
	})
}

// Remove deletes the session from the registry, releases its identity and
// persists. Its summary, if any, is kept.
func (r *Registry) Remove(agentID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	i := r.index(agentID)
	if i < 0 {
		return fmt.Errorf("remove session %s: %w", agentID, ErrSessionNotFound)
	}
	old := r.sessions[i]
	r.sessions = slices.Delete(r.sessions, i, i+1)
	if err := r.persistLocked(); err != nil {
		r.sessions = slices.Insert(r.sessions, i, old)
		return fmt.Errorf("remove session %s: %w", agentID, err)
	}
	delete(r.encoded, agentID)
	if old.Status.Live() {
		r.releaseLocked(old.Identity, agentID)
	}
	return nil
}

// Close releases every identity the registry holds, the instance identity
// last. It writes nothing: each change was persisted when it was made, and
// sessions still live in the file are marked stale by the next Open. Set
// final statuses (CloseSession, InterruptSession) before Close. Closing twice
// is a no-op.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for id, b := range r.bound {
		if b.claim != nil {
			errs = append(errs, b.claim.Release())
		}
		delete(r.bound, id)
	}
	if r.instance != nil {
		errs = append(errs, r.instance.Release())
	}
	return errors.Join(errs...)
}
