package workspace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A snapshot is the tree of a checkout's working tree as `git add -A`
// would stage it: committed, staged, unstaged and untracked (not ignored)
// together. It is written through a copy of the checkout's index (its stat
// data spares rehashing unchanged files), so the checkout's own index, and
// an agent's git running there, are never touched. Its blobs go to the
// object store like `git stash`'s do; unreferenced, git's gc drops them.

// snap is a snapshot: the working tree's tree, and HEAD's commit and tree.
// Until release, it keeps the index it was written through (index), which
// is then what the checkout's own index would be if HEAD were a commit of
// tree (see installIndex).
type snap struct {
	tree, head, headTree string
	index, realIndex     string // the snapshot's index and the checkout's
	fs                   files  // where they are
}

// snapTimeout bounds a snapshot's file operations that run without the
// caller's context (release, installIndex): on a host, a round trip.
const snapTimeout = 30 * time.Second

// uncommitted reports whether the working tree differs from HEAD.
func (s snap) uncommitted() bool { return s.tree != s.headTree }

// release removes the snapshot's index.
func (s snap) release() {
	if s.index != "" {
		ctx, cancel := context.WithTimeout(context.Background(), snapTimeout)
		defer cancel()
		_ = s.fs.remove(ctx, s.index)
	}
}

// snapshot returns the snapshot of dir's working tree; its index is
// already released.
func (m *Manager) snapshot(ctx context.Context, dir string) (snap, error) {
	s, err := m.snapshotKeep(ctx, dir)
	s.release()
	return s, err
}

// snapshotKeep is snapshot keeping the snapshot's index: the caller
// releases it.
func (m *Manager) snapshotKeep(ctx context.Context, dir string) (snap, error) {
	s, err := m.snapshot1(ctx, dir)
	if err != nil {
		s.release()
		return snap{}, fmt.Errorf("workspace: snapshot %s: %w", dir, err)
	}
	return s, nil
}

func (m *Manager) snapshot1(ctx context.Context, dir string) (snap, error) {
	s := snap{fs: m.fs}
	l, err := m.git.lines(ctx, dir, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-path", "index",
		"--absolute-git-dir", "HEAD", "HEAD^{tree}")
	if err != nil {
		return s, err
	}
	if len(l) != 5 {
		return s, fmt.Errorf("rev-parse printed %q", l)
	}
	top, gitDir := l[0], l[2]
	s.realIndex, s.head, s.headTree = l[1], l[3], l[4]
	s.index, err = m.fs.tempCopy(ctx, gitDir, s.realIndex)
	if err != nil {
		return s, err
	}
	o := gitOpts{env: []string{"GIT_INDEX_FILE=" + s.index}}
	if _, err := m.git.run(ctx, top, o, "add", "--all"); err != nil {
		return s, err
	}
	b, err := m.git.run(ctx, top, o, "write-tree")
	if err != nil {
		return s, err
	}
	s.tree = strings.TrimSpace(string(b))
	return s, nil
}

// installIndex makes the snapshot's index the checkout's, as git replaces
// an index: through index.lock (made by a hard link, which fails if a git
// holds the lock), renamed over the index. The checkout's HEAD must be a
// commit of s.tree by then. It spares a `git reset`, which would rehash
// nothing but restat and rewrite every entry.
func (s snap) installIndex() error {
	ctx, cancel := context.WithTimeout(context.Background(), snapTimeout)
	defer cancel()
	return s.fs.installIndex(ctx, s.index, s.realIndex)
}

// FileChange is one file's change between two trees.
type FileChange struct {
	// Path is the file's path after the change (before it, for a deletion).
	Path string `json:"path"`
	// OldPath is the path before a rename or copy ("" otherwise).
	OldPath string `json:"old_path,omitempty"`
	// Status is git's letter: A added, M modified, D deleted, R renamed,
	// C copied, T type changed.
	Status string `json:"status"`
	// Added and Removed count lines; both are 0 for a binary file.
	Added   int  `json:"added"`
	Removed int  `json:"removed"`
	Binary  bool `json:"binary,omitempty"`
	// Ranges are the changed lines, in the old file's numbering (set by a
	// diff with ranges: the radar's).
	Ranges []LineRange `json:"ranges,omitempty"`
}

// LineRange is a hunk's lines in the old file: Start…End, inclusive. A
// pure insertion after line n is the empty range Start n+1, End n.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// String is "12-15", "12", or "after 11" for an insertion.
func (r LineRange) String() string {
	switch {
	case r.End < r.Start:
		return "after " + strconv.Itoa(r.End)
	case r.End == r.Start:
		return strconv.Itoa(r.Start)
	}
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// DiffStat sums a change.
type DiffStat struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Removed int `json:"removed"`
}

// String is like git's: "3 files changed, 10 insertions(+), 2 deletions(-)".
func (s DiffStat) String() string {
	return fmt.Sprintf("%d files changed, %d insertions(+), %d deletions(-)", s.Files, s.Added, s.Removed)
}

func statOfFiles(files []FileChange) DiffStat {
	s := DiffStat{Files: len(files)}
	for _, f := range files {
		s.Added += f.Added
		s.Removed += f.Removed
	}
	return s
}

// diffOpts choose what diffTrees computes.
type diffOpts struct {
	patch   bool     // the unified patch
	context int      // its context lines (with ranges: 0)
	ranges  bool     // hunk ranges per file (a -U0 patch, not returned)
	paths   []string // limit to these paths
}

// diffTrees compares two trees (or commits) in dir, renames detected: the
// files with their line counts, and the patch or ranges when asked, from one
// `git diff-tree --raw --numstat [-p]`.
func (m *Manager) diffTrees(ctx context.Context, dir, from, to string, o diffOpts) ([]FileChange, string, error) {
	args := []string{"-c", "core.quotePath=false", "diff-tree", "-r", "-M", "-z", "--raw", "--numstat", "--no-color", "--no-ext-diff"}
	if o.ranges {
		args = append(args, "-p", "-U0")
	} else if o.patch {
		args = append(args, "-p", "-U"+strconv.Itoa(o.context))
	}
	args = append(args, from, to, "--")
	args = append(args, o.paths...)
	out, err := m.git.run(ctx, dir, gitOpts{readOnly: true}, args...)
	if err != nil {
		return nil, "", fmt.Errorf("workspace: diff %s..%s: %w", short(from), short(to), err)
	}
	files, patch, err := parseDiffTree(string(out))
	if err != nil {
		return nil, "", err
	}
	if o.ranges {
		addRanges(files, patch)
		patch = ""
	}
	return files, patch, nil
}

// parseDiffTree splits `diff-tree -z --raw --numstat [-p]` output: raw
// entries (":<modes> <oids> <status>" NUL path NUL [new path NUL]), as many
// numstat entries ("<added>\t<removed>\t<path>" NUL, or for a rename
// "<a>\t<r>\t" NUL old NUL new NUL), then, with -p, a NUL and the patch.
func parseDiffTree(out string) ([]FileChange, string, error) {
	files, _, patch, err := parseDiffRaw(out)
	return files, patch, err
}

// blobSide is the new side of a raw diff entry: the file's mode and
// object as the compared tree or index has it (zeros for a deletion).
type blobSide struct{ mode, oid string }

// parseDiffRaw is parseDiffTree also returning each file's new side.
func parseDiffRaw(out string) ([]FileChange, []blobSide, string, error) {
	var files []FileChange
	var sides []blobSide
	next := func() (string, bool) {
		i := strings.IndexByte(out, 0)
		if i < 0 {
			return "", false
		}
		f := out[:i]
		out = out[i+1:]
		return f, true
	}
	bad := errors.New("workspace: unexpected diff-tree output")
	for strings.HasPrefix(out, ":") {
		meta, _ := next()
		w := strings.Fields(meta)
		if len(w) < 5 {
			return nil, nil, "", bad
		}
		fc := FileChange{Status: w[4][:1]}
		sides = append(sides, blobSide{mode: strings.TrimPrefix(w[1], ":"), oid: w[3]})
		p1, ok := next()
		if !ok {
			return nil, nil, "", bad
		}
		fc.Path = p1
		if fc.Status == "R" || fc.Status == "C" {
			p2, ok := next()
			if !ok {
				return nil, nil, "", bad
			}
			fc.OldPath, fc.Path = p1, p2
		}
		files = append(files, fc)
	}
	for i := range files {
		f, ok := next()
		if !ok {
			return nil, nil, "", bad
		}
		w := strings.SplitN(f, "\t", 3)
		if len(w) != 3 {
			return nil, nil, "", bad
		}
		if w[2] == "" { // a rename: the two paths follow
			next()
			next()
		}
		if w[0] == "-" {
			files[i].Binary = true
			continue
		}
		files[i].Added, _ = strconv.Atoi(w[0])
		files[i].Removed, _ = strconv.Atoi(w[1])
	}
	return files, sides, strings.TrimPrefix(out, "\x00"), nil
}

// addRanges reads the old-side line ranges of each file's hunks from a -U0
// patch whose file sections come in files' order.
func addRanges(files []FileChange, patch string) {
	i := -1
	for len(patch) > 0 {
		line := patch
		if nl := strings.IndexByte(patch, '\n'); nl >= 0 {
			line, patch = patch[:nl], patch[nl+1:]
		} else {
			patch = ""
		}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			i++
		case strings.HasPrefix(line, "@@ -") && i >= 0 && i < len(files):
			if r, ok := parseHunkOld(line); ok {
				files[i].Ranges = append(files[i].Ranges, r)
			}
		}
	}
}

// parseHunkOld reads the old side of "@@ -a,b +c,d @@".
func parseHunkOld(line string) (LineRange, bool) {
	f := strings.Fields(line)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") {
		return LineRange{}, false
	}
	a, b, hasB := strings.Cut(f[1][1:], ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return LineRange{}, false
	}
	n := 1
	if hasB {
		if n, err = strconv.Atoi(b); err != nil {
			return LineRange{}, false
		}
	}
	if n == 0 {
		return LineRange{Start: start + 1, End: start}, true
	}
	return LineRange{Start: start, End: start + n - 1}, true
}

// short abbreviates a commit id for messages.
func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}

// base is the commit a worktree's own work starts from, against which its
// change is shown and merged: the recorded base, unless the agent has taken
// the lead's newer work into its branch (merged or rebased it): then the
// newest commit it shares with the lead's branch. (After a squash merge the
// record's Base is the merged commit and Landed the lead's squash commit:
// the shared commit counts only once it holds Landed.)
func (m *Manager) baseOf(ctx context.Context, rec record, head string) (string, error) {
	if head == rec.Base {
		return rec.Base, nil
	}
	lead, err := m.git.out(ctx, rec.Source, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil {
		return rec.Base, nil // no lead checkout to compare with
	}
	return m.baseWith(ctx, rec, head, lead)
}

// baseWith is baseOf with the lead's HEAD commit known.
func (m *Manager) baseWith(ctx context.Context, rec record, head, lead string) (string, error) {
	if head == rec.Base {
		return rec.Base, nil
	}
	mb, err := m.git.out(ctx, rec.Source, "merge-base", head, lead)
	if err != nil {
		return rec.Base, nil // unrelated histories
	}
	if mb == rec.Base {
		return rec.Base, nil
	}
	inHead, err := m.isAncestor(ctx, rec.Source, rec.Base, head)
	if err != nil {
		return "", err
	}
	if !inHead {
		return mb, nil
	}
	if ok, err := m.isAncestor(ctx, rec.Source, rec.Landed, mb); err != nil || ok {
		return mb, err
	}
	return rec.Base, nil
}

// Changes returns the change of a session's worktree against its base,
// committed and uncommitted and untracked together, with the changed line
// ranges: what the radar compares.
func (m *Manager) Changes(ctx context.Context, p *Place) ([]FileChange, error) {
	rec, err := m.recordOfPlace(ctx, p)
	if err != nil {
		return nil, err
	}
	s, err := m.snapshot(ctx, rec.Path)
	if err != nil {
		return nil, err
	}
	from, err := m.baseOf(ctx, *rec, s.head)
	if err != nil {
		return nil, err
	}
	files, _, err := m.diffTrees(ctx, rec.Path, from, s.tree, diffOpts{ranges: true})
	return files, err
}

// statOf sums the change of rec's worktree against its base.
func (m *Manager) statOf(ctx context.Context, rec record) (DiffStat, error) {
	s, err := m.snapshot(ctx, rec.Path)
	if err != nil {
		return DiffStat{}, err
	}
	from, err := m.baseOf(ctx, rec, s.head)
	if err != nil {
		return DiffStat{}, err
	}
	files, _, err := m.diffTrees(ctx, rec.Path, from, s.tree, diffOpts{})
	return statOfFiles(files), err
}
