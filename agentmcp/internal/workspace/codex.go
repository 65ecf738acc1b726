package workspace

import (
	"context"
	"fmt"
	"strings"
)

// WritableRoots returns the directories that a sandboxed agent needs
// writable, besides its worktree, to commit on its branch: Codex's
// sandbox_workspace_write.writable_roots for the session. Measured with
// Codex 0.171.0 and 0.153.4 (the pinned CLIs; first with 0.169.0) under
// sandbox_mode "workspace-write" (see the package doc):
//
//   - the worktree's own git directory, <common>/worktrees/<name> (its
//     index, HEAD, logs/HEAD, ORIG_HEAD, COMMIT_EDITMSG; Codex makes the
//     git directory a worktree's .git file points to read-only, and a
//     writable root given explicitly overrides that);
//   - <common>/objects, for the new blobs, trees and commits;
//   - <common>/refs/heads/atm and <common>/logs/refs/heads/atm, where git
//     locks and moves the branch and appends to its reflog.
//
// Nothing else of the repository becomes writable: not its config, not
// its hooks, not packed-refs, not any other branch or tag, not the lead's
// index. The two ref directories are made if missing (a `git pack-refs`
// may have removed them). Never give these under a read-only sandbox.
func (m *Manager) WritableRoots(ctx context.Context, p *Place) ([]string, error) {
	prefix := strings.TrimSuffix(BranchPrefix, "/")
	roots, err := m.git.lines(ctx, p.Path, "rev-parse", "--path-format=absolute", "--absolute-git-dir",
		"--git-path", "objects", "--git-path", "refs/heads/"+prefix, "--git-path", "logs/refs/heads/"+prefix)
	if err != nil {
		return nil, fmt.Errorf("workspace: writable roots of %s: %w", p.Path, err)
	}
	if len(roots) != 4 {
		return nil, fmt.Errorf("workspace: writable roots of %s: rev-parse printed %q", p.Path, roots)
	}
	for _, d := range roots[2:] {
		if err := m.fs.mkdirAll(ctx, d); err != nil {
			return nil, fmt.Errorf("workspace: writable roots: %w", err)
		}
	}
	return roots, nil
}
