package workspace

import (
	"context"
	"fmt"
	"sort"
)

// State is where a worktree of ours stands.
type State string

const (
	// Live: locked by a session whose serve runs.
	Live State = "live"
	// Kept: unlocked; its session was closed (or serve stopped) and it
	// holds work, or waits to be resumed.
	Kept State = "kept"
	// Orphaned: locked by a serve that is gone (killed): resumable, and
	// nobody's until a session takes it again.
	Orphaned State = "orphaned"
)

// Worktree is one worktree we made, as List reports it.
type Worktree struct {
	Name     string `json:"name"`
	AgentID  string `json:"agent_id"`
	Identity string `json:"identity,omitempty"`
	Team     string `json:"team,omitempty"`
	Branch   string `json:"branch"`
	Path     string `json:"path"`
	Source   string `json:"source"`
	Base     string `json:"base"`
	Head     string `json:"head,omitempty"`
	State    State  `json:"state"`
	// Owner is the lock's holder (Live, Orphaned).
	Owner *Owner `json:"owner,omitempty"`
	// Missing is true when its directory is gone (deleted by hand).
	Missing bool `json:"missing,omitempty"`
	// Resumable is true when a session may take it (again): it is kept or
	// orphaned, and its directory is there.
	Resumable bool `json:"resumable"`
	// Dirty counts uncommitted paths (modified, staged, untracked).
	Dirty int `json:"dirty"`
	// Ahead counts commits that neither its base nor the lead's branch
	// holds.
	Ahead int `json:"ahead"`
}

// Clean reports whether the worktree holds no work.
func (w Worktree) Clean() bool { return w.Dirty == 0 && w.Ahead == 0 }

// List returns every worktree we made in the repository that holds dir,
// sorted by name, with its state, whether it is dirty and how many commits
// it is ahead. Worktrees that are not ours are not listed.
func (m *Manager) List(ctx context.Context, dir string) ([]Worktree, error) {
	co, err := m.checkoutOf(ctx, dir)
	if err != nil {
		return nil, err
	}
	recs, err := m.readRecords(ctx, co.Top, recordRefs)
	if err != nil {
		return nil, err
	}
	wts, err := m.worktrees(ctx, co.Top)
	if err != nil {
		return nil, err
	}
	byPath := map[string]worktreeEntry{}
	for _, w := range wts {
		byPath[w.Path] = w
	}
	res := make([]Worktree, 0, len(recs))
	for _, rec := range recs {
		w := Worktree{Name: rec.Name, AgentID: rec.AgentID, Identity: rec.Identity, Team: rec.Team, Branch: rec.Branch,
			Path: rec.Path, Source: rec.Source, Base: rec.Base, State: Kept}
		e, ok := byPath[rec.Path]
		if !ok || e.Prunable {
			w.Missing = true
			if tip, err := m.git.out(ctx, co.Top, "rev-parse", "--verify", "--quiet", "refs/heads/"+rec.Branch); err == nil {
				w.Head = tip
				rec.Source = co.Top
				if w.Ahead, err = m.ahead(ctx, rec, tip); err != nil {
					return nil, err
				}
			}
		} else {
			w.Head = e.Head
			if rec.Source == "" {
				rec.Source = co.Top
			}
			st, err := m.stateOf(ctx, rec)
			if err != nil {
				return nil, err
			}
			w.Dirty, w.Ahead = st.dirty, st.ahead
		}
		if e.Locked {
			if h, ours := parseLockReason(e.LockReason); ours {
				o := h.Owner
				w.Owner = &o
				w.State = Orphaned
				if o.alive(m.owner) {
					w.State = Live
				}
			} else {
				w.State = Live // locked by someone else: not ours to judge
			}
		}
		w.Resumable = w.State != Live && !w.Missing
		res = append(res, w)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Name < res[j].Name })
	return res, nil
}

// PruneReport says what Prune removed and what it kept, and why.
type PruneReport struct {
	Removed []Worktree     `json:"removed"`
	Kept    []KeptWorktree `json:"kept"`
	// Checks counts the temporary check worktrees of dead serves removed.
	Checks int `json:"checks_removed"`
}

// KeptWorktree is a worktree Prune left alone, with the reason.
type KeptWorktree struct {
	Worktree
	Reason string `json:"reason"`
}

// Prune removes the worktrees we made that hold no work and that nobody
// owns (kept, or orphaned by a dead serve), with their branches and
// records, and the check worktrees of dead serves; it keeps every live
// one, every dirty one and every one with commits, saying why.
func (m *Manager) Prune(ctx context.Context, dir string) (PruneReport, error) {
	var rep PruneReport
	list, err := m.List(ctx, dir)
	if err != nil {
		return rep, err
	}
	co, err := m.checkoutOf(ctx, dir)
	if err != nil {
		return rep, err
	}
	recs, err := m.readRecords(ctx, co.Top, recordRefs)
	if err != nil {
		return rep, err
	}
	byName := map[string]record{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	for _, w := range list {
		keep := func(why string, a ...any) { rep.Kept = append(rep.Kept, KeptWorktree{w, fmt.Sprintf(why, a...)}) }
		switch {
		case w.State == Live && w.Owner != nil:
			keep("live: held by agent %s of pid %d", w.AgentID, w.Owner.PID)
		case w.State == Live:
			keep("locked by someone else")
		case w.Dirty > 0:
			keep("dirty: %d uncommitted paths", w.Dirty)
		case w.Ahead > 0:
			keep("%d commits ahead of its base", w.Ahead)
		default:
			rec := byName[w.Name]
			if err := m.pruneOne(ctx, co.Top, rec, w); err != nil {
				keep("could not remove: %v", err)
				continue
			}
			rep.Removed = append(rep.Removed, w)
		}
	}
	rep.Checks, err = m.pruneChecks(ctx, co.Top)
	return rep, err
}

// pruneOne removes a clean worktree nobody owns (or its record, when its
// directory is gone).
func (m *Manager) pruneOne(ctx context.Context, top string, rec record, w Worktree) error {
	rec.Source = top
	if w.State == Orphaned {
		if _, err := m.git.out(ctx, top, "worktree", "unlock", rec.Path); err != nil {
			return err
		}
	}
	if !w.Missing {
		// Under the unlock, the state again: a serve may have taken it.
		st, err := m.stateOf(ctx, rec)
		if err != nil {
			return err
		}
		if st.dirty > 0 || st.ahead > 0 {
			return fmt.Errorf("it changed meanwhile")
		}
		if e, err := m.worktreeAt(ctx, top, rec.Path); err != nil || e == nil || e.Locked {
			return fmt.Errorf("it was taken meanwhile")
		}
		return m.remove(ctx, rec, st.head)
	}
	if _, err := m.git.out(ctx, top, "worktree", "remove", "--force", rec.Path); err != nil {
		m.log.Debug("remove a missing worktree", "path", rec.Path, "err", err)
	}
	if w.Head != "" {
		if _, err := m.git.out(ctx, top, "update-ref", "-d", "refs/heads/"+rec.Branch, w.Head); err != nil {
			return err
		}
	}
	return m.deleteRecord(ctx, top, rec)
}

// pruneChecks removes the check worktrees whose serve is gone.
func (m *Manager) pruneChecks(ctx context.Context, top string) (int, error) {
	recs, err := m.readRecords(ctx, top, checkRefs)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	wts, err := m.worktrees(ctx, top)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rec := range recs {
		rec.Source = top
		for _, w := range wts {
			if w.Path != rec.Path {
				continue
			}
			if h, ours := parseLockReason(w.LockReason); w.Locked && (!ours || h.Owner.alive(m.owner)) {
				rec.Path = "" // a check that runs
			}
		}
		if rec.Path == "" {
			continue
		}
		m.removeCheck(ctx, rec)
		n++
	}
	return n, nil
}
