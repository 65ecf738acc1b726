package workspace

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Reenter hands an existing worktree of agentID back to its session (a
// resume): found by its record in the repository that holds cwd, its lock
// taken over when nobody alive holds it (a lock whose owner is gone, after
// a SIGKILL of serve, counts as resumable), and ports reserved anew. The
// worktree's files are not touched. It fails with ErrNotFound when there
// is no such worktree, ErrOwned when a live process (another serve) holds
// it.
func (m *Manager) Reenter(ctx context.Context, agentID, cwd string, ports int) (*Place, error) {
	co, err := m.checkoutOf(ctx, cwd)
	if err != nil {
		return nil, err
	}
	recs, err := m.readRecords(ctx, co.Top, recordRefs)
	if err != nil {
		return nil, err
	}
	var rec *record
	for i := range recs {
		if recs[i].AgentID == agentID {
			rec = &recs[i]
			break
		}
	}
	if rec == nil {
		return nil, fmt.Errorf("workspace: agent %s in %s: %w", agentID, co.Top, ErrNotFound)
	}
	wt, err := m.worktreeAt(ctx, co.Top, rec.Path)
	if err != nil {
		return nil, err
	}
	if wt == nil || wt.Prunable {
		return nil, fmt.Errorf("workspace: agent %s: the worktree %s is gone: %w", agentID, rec.Path, ErrNotFound)
	}
	if err := m.takeLock(ctx, *rec, *wt, agentID); err != nil {
		return nil, err
	}
	p := &Place{Name: rec.Name, AgentID: agentID, Path: rec.Path, Cwd: rec.Path, Branch: rec.Branch, Base: rec.Base,
		BaseRef: rec.BaseRef, Source: rec.Source, Repo: co.Common, Resumed: true}
	if c, err := m.fs.realDir(ctx, cwd); err == nil {
		for _, root := range []string{rec.Path, rec.Source} {
			if rel, err := filepath.Rel(root, c); err == nil && !strings.HasPrefix(rel, "..") {
				p.Cwd = filepath.Join(rec.Path, rel)
				break
			}
		}
	}
	if ports > 0 {
		if m.ports == nil {
			return nil, errors.New("workspace: reenter: ports asked for but the manager has no port registry")
		}
		if p.Ports, err = m.ports.Reserve(ports, agentID); err != nil {
			return nil, fmt.Errorf("workspace: reenter: %w", err)
		}
	}
	m.log.Info("worktree re-entered", "agent_id", agentID, "path", p.Path)
	return p, nil
}

// takeLock makes the worktree locked by us for agentID: unless a live
// process holds it, or someone else locked it for a reason of their own.
// Takeovers are serialized by a file lock in the worktree's admin
// directory, since `git worktree lock` checks and writes non-atomically.
func (m *Manager) takeLock(ctx context.Context, rec record, wt worktreeEntry, agentID string) error {
	gitDir, err := m.git.out(ctx, rec.Path, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return fmt.Errorf("workspace: %s: %w", rec.Path, err)
	}
	unlock, err := m.fs.lock(ctx, filepath.Join(gitDir, "atm-owner.lock"))
	if err != nil {
		return fmt.Errorf("workspace: lock %s: %w", rec.Path, err)
	}
	defer unlock()
	// Read the lock again under the file lock.
	cur, err := m.worktreeAt(ctx, rec.Source, rec.Path)
	if err != nil {
		return err
	}
	if cur != nil {
		wt = *cur
	}
	if wt.Locked {
		h, ours := parseLockReason(wt.LockReason)
		switch {
		case !ours:
			return fmt.Errorf("workspace: %s is locked by someone else (%q): %w", rec.Path, wt.LockReason, ErrOwned)
		case h.Owner.same(m.owner) && h.AgentID == agentID:
			return nil // already ours
		case h.Owner.alive(m.owner):
			return fmt.Errorf("workspace: %s is held by agent %s of pid %d (%s): %w", rec.Path, h.AgentID, h.Owner.PID, h.Owner.Host, ErrOwned)
		}
		if _, err := m.git.out(ctx, rec.Source, "worktree", "unlock", rec.Path); err != nil {
			return fmt.Errorf("workspace: take over %s: %w", rec.Path, err)
		}
	}
	if _, err := m.git.out(ctx, rec.Source, "worktree", "lock", "--reason", lockReason(agentID, m.owner), rec.Path); err != nil {
		return fmt.Errorf("workspace: lock %s: %w", rec.Path, err)
	}
	return nil
}

// Released says what became of a worktree at the end of its session.
type Released struct {
	// Removed is true when the worktree and its branch are gone: it held
	// no change.
	Removed bool
	Path    string
	Branch  string
	// Ahead counts the commits of the worktree that its base and the lead's
	// branch lack.
	Ahead int
	// Dirty counts the uncommitted paths (modified, staged, untracked).
	Dirty int
	// Stat is the change against the base when the worktree is kept.
	Stat DiffStat
}

// Release ends the session's hold on its worktree and frees its ports.
// With keep false (the agent was closed) a worktree without any change
// against its base (no commit, nothing uncommitted, nothing untracked) is
// removed with its branch and record; any other is unlocked and kept, and
// the result names its branch, path and diff stat. With keep true (the
// session stays resumable: serve stops) the worktree is only unlocked.
// A worktree is never removed while it holds work: the check runs again
// inside `git worktree remove`, which refuses a dirty one.
func (m *Manager) Release(ctx context.Context, p *Place, keep bool) (Released, error) {
	r := Released{Path: p.Path, Branch: p.Branch}
	if p.Ports.Count > 0 && m.ports != nil {
		if err := m.ports.Release(p.Ports); err != nil {
			m.log.Warn("could not release ports", "ports", p.Ports, "err", err)
		}
		p.Ports = PortBlock{}
	}
	rec, err := m.recordOf(ctx, p)
	if err != nil {
		return r, err
	}
	if _, err := m.git.run(ctx, rec.Source, gitOpts{}, "worktree", "unlock", rec.Path); err != nil {
		m.log.Debug("unlock", "path", rec.Path, "err", err) // not locked: fine
	}
	if keep {
		return r, nil
	}
	st, err := m.stateOf(ctx, *rec)
	if err != nil {
		return r, err
	}
	r.Ahead, r.Dirty = st.ahead, st.dirty
	if st.ahead > 0 || st.dirty > 0 {
		if r.Stat, err = m.statOf(ctx, *rec); err != nil {
			m.log.Warn("diff stat of a kept worktree", "path", rec.Path, "err", err)
		}
		m.log.Info("worktree kept", "path", rec.Path, "branch", rec.Branch, "ahead", st.ahead, "dirty", st.dirty)
		return r, nil
	}
	if err := m.remove(ctx, *rec, st.head); err != nil {
		return r, err
	}
	r.Removed = true
	m.log.Info("worktree removed", "path", rec.Path, "branch", rec.Branch)
	return r, nil
}

// recordOf finds the record of p's worktree.
func (m *Manager) recordOf(ctx context.Context, p *Place) (*record, error) {
	recs, err := m.readRecords(ctx, p.Source, recordRefs)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if recs[i].Path == p.Path && recs[i].AgentID == p.AgentID {
			return &recs[i], nil
		}
	}
	return nil, fmt.Errorf("workspace: %s: %w", p.Path, ErrNotFound)
}

// wtState is what a worktree holds.
type wtState struct {
	head  string // its HEAD commit
	ahead int    // commits not in its base nor in the lead's branch
	dirty int    // uncommitted paths
}

// stateOf reads what rec's worktree holds (it must exist).
func (m *Manager) stateOf(ctx context.Context, rec record) (wtState, error) {
	var st wtState
	out, err := m.git.run(ctx, rec.Path, gitOpts{readOnly: true}, "status", "--porcelain=v2", "-z", "--untracked-files=all")
	if err != nil {
		return st, fmt.Errorf("workspace: status of %s: %w", rec.Path, err)
	}
	st.dirty = len(statusPaths(out))
	if st.head, err = m.git.out(ctx, rec.Path, "rev-parse", "HEAD"); err != nil {
		return st, fmt.Errorf("workspace: HEAD of %s: %w", rec.Path, err)
	}
	st.ahead, err = m.ahead(ctx, rec, st.head)
	return st, err
}

// ahead counts the commits of head and of rec's branch that neither the
// base nor the lead's HEAD holds.
func (m *Manager) ahead(ctx context.Context, rec record, head string) (int, error) {
	args := []string{"rev-list", "--count", head}
	if ok, _ := m.refExists(ctx, rec.Source, "refs/heads/"+rec.Branch); ok {
		args = append(args, "refs/heads/"+rec.Branch)
	}
	args = append(args, "--not", rec.Base)
	if lead, err := m.git.out(ctx, rec.Source, "rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
		args = append(args, lead)
	}
	s, err := m.git.out(ctx, rec.Source, args...)
	if err != nil {
		return 0, fmt.Errorf("workspace: commits of %s: %w", rec.Path, err)
	}
	var n int
	_, err = fmt.Sscan(s, &n)
	return n, err
}

// remove deletes a clean worktree of ours: the worktree (git refuses if it
// became dirty), then its branch if it still points at head, then its
// record.
func (m *Manager) remove(ctx context.Context, rec record, head string) error {
	if _, err := m.git.out(ctx, rec.Source, "worktree", "remove", rec.Path); err != nil {
		return fmt.Errorf("workspace: remove %s: %w", rec.Path, err)
	}
	if _, err := m.git.out(ctx, rec.Source, "update-ref", "-m", "atm-agent-mcp: remove", "-d", "refs/heads/"+rec.Branch, head); err != nil {
		m.log.Warn("branch kept: it moved", "branch", rec.Branch, "err", err)
		return nil // the branch holds something: keep it with the record
	}
	return m.deleteRecord(ctx, rec.Source, rec)
}

// worktreeEntry is one worktree of `git worktree list --porcelain -z`.
type worktreeEntry struct {
	Path       string
	Head       string
	Branch     string // full ref, "" when detached
	Bare       bool
	Locked     bool
	LockReason string
	Prunable   bool
}

// worktrees lists the worktrees of the repository that holds dir.
func (m *Manager) worktrees(ctx context.Context, dir string) ([]worktreeEntry, error) {
	out, err := m.git.run(ctx, dir, gitOpts{readOnly: true}, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, fmt.Errorf("workspace: list worktrees: %w", err)
	}
	return parseWorktreeList(out), nil
}

// parseWorktreeList parses `git worktree list --porcelain -z`: fields
// "key value" separated by NUL, entries by an empty field.
func parseWorktreeList(out []byte) []worktreeEntry {
	var res []worktreeEntry
	var cur *worktreeEntry
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			cur = nil
			continue
		}
		k, v, _ := strings.Cut(f, " ")
		if k == "worktree" {
			res = append(res, worktreeEntry{Path: filepath.Clean(v)})
			cur = &res[len(res)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch k {
		case "HEAD":
			cur.Head = v
		case "branch":
			cur.Branch = v
		case "bare":
			cur.Bare = true
		case "locked":
			cur.Locked, cur.LockReason = true, v
		case "prunable":
			cur.Prunable = true
		}
	}
	return res
}

// worktreeAt returns the worktree at path, or nil.
func (m *Manager) worktreeAt(ctx context.Context, dir, path string) (*worktreeEntry, error) {
	wts, err := m.worktrees(ctx, dir)
	if err != nil {
		return nil, err
	}
	for i := range wts {
		if wts[i].Path == path {
			return &wts[i], nil
		}
	}
	if there, _ := m.fs.exists(ctx, path); there {
		return nil, fmt.Errorf("workspace: %s is not a worktree of the repository", path)
	}
	return nil, nil
}

// statusPaths returns the paths of `git status --porcelain=v2 -z` output:
// "1 <7 fields> <path>", "2 <8 fields> <path>" NUL <orig path>, "u <9
// fields> <path>", "? <path>" (headers and ignored entries are skipped).
func statusPaths(out []byte) []string {
	var paths []string
	f := splitNUL(out)
	for i := 0; i < len(f); i++ {
		e := f[i]
		if len(e) < 2 || e[1] != ' ' {
			continue
		}
		n := map[byte]int{'1': 9, '2': 10, 'u': 11, '?': 2}[e[0]]
		if n == 0 {
			continue
		}
		w := strings.SplitN(e, " ", n)
		if len(w) == n {
			paths = append(paths, w[n-1])
		}
		if e[0] == '2' {
			i++ // the original path
		}
	}
	return paths
}
