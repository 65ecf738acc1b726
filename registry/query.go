package registry

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Filter selects sessions. Zero fields match everything.
type Filter struct {
	Repo     string // matches RepoName or RepoRoot
	Identity string
	Status   Status
}

// Match reports whether s passes the filter.
func (f Filter) Match(s Session) bool {
	if f.Repo != "" && f.Repo != s.RepoName && f.Repo != s.RepoRoot {
		return false
	}
	if f.Identity != "" && f.Identity != s.Identity {
		return false
	}
	if f.Status != "" && f.Status != s.Status {
		return false
	}
	return true
}

// List returns the sessions matching f in registry order (oldest added
// first).
func (r *Registry) List(f Filter) []Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Session
	for _, s := range r.sessions {
		if f.Match(s) {
			out = append(out, s.clone())
		}
	}
	return out
}

// find returns the first session for which match is true.
func (r *Registry) find(match func(Session) bool) (Session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sessions {
		if match(s) {
			return s.clone(), true
		}
	}
	return Session{}, false
}

// ByAgentID returns the session with this agent_id.
func (r *Registry) ByAgentID(agentID string) (Session, bool) {
	return r.find(func(s Session) bool { return s.AgentID == agentID })
}

// ByBackendID returns the session of this Codex thread id. An empty id
// matches nothing.
func (r *Registry) ByBackendID(backendID string) (Session, bool) {
	if backendID == "" {
		return Session{}, false
	}
	return r.find(func(s Session) bool { return s.BackendID == backendID })
}

// ByIdentity returns the live session bound to identity, if any.
func (r *Registry) ByIdentity(identity string) (Session, bool) {
	return r.find(func(s Session) bool { return s.Identity == identity && s.Status.Live() })
}

// MostRecent returns the session of identity that was active last, in any
// status: the candidate for `serve --resume` (FR-6.1). Ties go to the
// session added later.
func (r *Registry) MostRecent(identity string) (Session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	best := -1
	for i, s := range r.sessions {
		if s.Identity != identity {
			continue
		}
		if best < 0 || !s.LastActive.Before(r.sessions[best].LastActive) {
			best = i
		}
	}
	if best < 0 {
		return Session{}, false
	}
	return r.sessions[best].clone(), true
}

// Prune drops the sessions that are not live (closed, stale, interrupted)
// and were last active more than olderThan ago, persists, and then deletes
// their summary directories {team}/{identity}/{backend_id}. It returns the
// sessions dropped. A summary that cannot be deleted is reported in the
// error after the registry has been pruned.
func (r *Registry) Prune(olderThan time.Duration) ([]Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	cutoff := r.now().Add(-olderThan)
	var keep, dropped []Session
	for _, s := range r.sessions {
		if !s.Status.Live() && s.LastActive.Before(cutoff) {
			dropped = append(dropped, s)
		} else {
			keep = append(keep, s)
		}
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	old := r.sessions
	r.sessions = keep
	if err := r.persistLocked(); err != nil {
		r.sessions = old
		return nil, fmt.Errorf("prune registry: %w", err)
	}
	var errs []error
	for _, s := range dropped {
		delete(r.encoded, s.AgentID)
		if s.BackendID == "" || validIdentity(s.Identity) != nil || validBackendID(s.BackendID) != nil {
			continue
		}
		if err := os.RemoveAll(r.dir.summaryDir(s.Identity, s.BackendID)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return dropped, fmt.Errorf("prune summaries: %w", err)
	}
	return dropped, nil
}
