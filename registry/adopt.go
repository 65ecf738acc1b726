package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Adopt moves the sessions of another instance registry of the same team
// directory into r and removes that instance's registry file. It is for a
// directory shared by proxies whose instance names change from run to run
// (the proxy keeps the registries of Claude Code session teams, one
// instance per session, under one key): a later instance takes over what
// earlier ones left, so that their sessions can be resumed.
//
// The other instance must have ended: Adopt takes its claim for the move
// and fails with a [*ConflictError] while a live proxy holds it. Its
// sessions arrive as they were, except that live ones become stale (as
// Open does). A session whose agent_id r already holds stays where it was.
// Summaries are kept per identity in the team directory and do not move.
// r's file is written before the other's is removed, so a crash in between
// leaves the sessions in both, and the next Adopt finishes the move. A
// Deferred registry claims its own instance before it takes any (see
// [Config]). It returns the sessions adopted.
func (r *Registry) Adopt(instance string) ([]Session, error) {
	return r.AdoptIf(instance, func(Session) bool { return true })
}

// AdoptHandedTo moves the sessions of another instance registry that were
// handed over to the Claude Code session to ([Session.HandedTo]) into r,
// as Adopt does, and leaves the instance's other sessions where they are
// (its file is rewritten without the ones moved; removed when none is
// left). It is how the proxy that a Claude Code conversation moved to
// takes up the agents the proxy it left handed over, whatever instance
// that one ran as. It returns the sessions adopted, HandedTo still set.
func (r *Registry) AdoptHandedTo(instance, to string) ([]Session, error) {
	if to == "" {
		return nil, fmt.Errorf("adopt %s: no Claude Code session named", instance)
	}
	return r.AdoptIf(instance, func(s Session) bool { return s.HandedTo == to })
}

// AdoptIf is Adopt of the sessions that take selects (as they are in the
// other instance's file); the others stay there, as AdoptHandedTo leaves
// them.
func (r *Registry) AdoptIf(instance string, take func(Session) bool) ([]Session, error) {
	if err := validIdentity(instance); err != nil {
		return nil, err
	}
	if instance == r.identity {
		return nil, fmt.Errorf("adopt %s: it is this registry's own instance", instance)
	}
	claim, err := r.dir.Claim(instance, "")
	if err != nil {
		return nil, fmt.Errorf("adopt %s: %w", instance, err)
	}
	defer claim.Release()
	path := r.dir.registryPath(instance)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adopt %s: %w", instance, err)
	}
	st, err := decodeFile(data)
	if err != nil {
		return nil, fmt.Errorf("adopt %s: %w", instance, err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if len(st.sessions) > 0 {
		if err := r.claimInstanceLocked(); err != nil {
			return nil, fmt.Errorf("adopt %s: %w", instance, err)
		}
	}
	n := len(r.sessions)
	var adopted, left []Session
	for _, s := range st.sessions {
		if !take(s) {
			left = append(left, s)
			continue
		}
		if r.index(s.AgentID) >= 0 || r.validate(s) != nil {
			continue
		}
		if s.Status.Live() {
			s.Status = StatusStale
			s.ThreadState = ThreadClosed
		}
		r.sessions = append(r.sessions, s)
		adopted = append(adopted, s.clone())
	}
	if len(adopted) > 0 {
		if err := r.persistLocked(); err != nil {
			r.sessions = r.sessions[:n]
			return nil, fmt.Errorf("adopt %s: %w", instance, err)
		}
	}
	if len(left) > 0 {
		if len(left) < len(st.sessions) {
			st.sessions = left
			data, err := encodeFile(st, encodeSession)
			if err == nil {
				err = writeFileAtomic(path, data)
			}
			if err != nil {
				r.log.Warn("adopted sessions stay in the old registry too", "instance", instance, "err", err)
			}
		}
	} else if err := os.Remove(path); err != nil {
		r.log.Warn("adopted sessions stay in the old registry too", "instance", instance, "err", err)
		return adopted, nil
	} else {
		os.Remove(filepath.Dir(path)) // the instance's directory, if nothing else is in it
	}
	for _, s := range adopted {
		r.log.Info("session taken over from an ended instance", "agent_id", s.AgentID, "identity", s.Identity, "from", instance)
	}
	return adopted, nil
}
