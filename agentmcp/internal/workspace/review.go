package workspace

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// DiffRequest asks for a session's change. Give Place for an isolated
// session; Dir and From for a session without isolation.
type DiffRequest struct {
	// Place is the session's worktree (Name, AgentID, Path and Source are
	// what is read).
	Place *Place
	// Dir is the checkout of a session without isolation.
	Dir string
	// From is the commit such a session started from (its HEAD then).
	From string
	// Paths limits the diff to these paths (git pathspecs). optional.
	Paths []string
	// Stat leaves the patch out: the files and their counts only.
	Stat bool
	// Context is the patch's lines of context. optional: 0 means 3.
	Context int
	// Offset and Limit page the patch, in characters: Limit 0 means all
	// of it from Offset.
	Offset, Limit int
}

// Diff is a session's change against its base: committed, uncommitted and
// untracked together.
type Diff struct {
	// Isolated is false for a session without a worktree: its change is
	// then the checkout's against the HEAD it started from, and may hold
	// other people's edits of that checkout.
	Isolated bool   `json:"isolated"`
	Base     string `json:"base"`
	Branch   string `json:"branch,omitempty"`
	// Head is the checkout's HEAD commit.
	Head string `json:"head"`
	// Uncommitted is true when the working tree differs from Head (staged,
	// unstaged or untracked changes): they are part of the diff.
	Uncommitted bool         `json:"uncommitted"`
	Files       []FileChange `json:"files"`
	Stat        DiffStat     `json:"stat"`
	// Patch is the page of the unified patch from PatchOffset; PatchTotal
	// is the whole patch's length and PatchMore says whether more follows.
	Patch       string `json:"patch,omitempty"`
	PatchOffset int    `json:"patch_offset"`
	PatchTotal  int    `json:"patch_total_chars"`
	PatchMore   bool   `json:"patch_more"`
}

// Diff returns a session's change: for a worktree against its base (see
// baseOf), for a checkout without isolation against the commit it started
// from. Nothing is changed in either (see snapshot).
func (m *Manager) Diff(ctx context.Context, req DiffRequest) (*Diff, error) {
	d := &Diff{}
	var dir, from string
	switch {
	case req.Place != nil:
		rec, err := m.recordOfPlace(ctx, req.Place)
		if err != nil {
			return nil, err
		}
		s, err := m.snapshot(ctx, rec.Path)
		if err != nil {
			return nil, err
		}
		if from, err = m.baseOf(ctx, *rec, s.head); err != nil {
			return nil, err
		}
		d.Isolated, d.Branch, d.Head, d.Uncommitted, dir = true, rec.Branch, s.head, s.uncommitted(), rec.Path
		return m.fillDiff(ctx, d, dir, from, s.tree, req)
	case req.Dir != "" && req.From != "":
		s, err := m.snapshot(ctx, req.Dir)
		if err != nil {
			return nil, err
		}
		if from, err = m.commitOf(ctx, req.Dir, req.From); err != nil {
			return nil, fmt.Errorf("workspace: diff: start %q: %w", req.From, err)
		}
		if b, err := m.git.out(ctx, req.Dir, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
			d.Branch = b
		}
		d.Head, d.Uncommitted = s.head, s.uncommitted()
		return m.fillDiff(ctx, d, req.Dir, from, s.tree, req)
	}
	return nil, errors.New("workspace: diff: give Place, or Dir and From")
}

// Head returns the commit that the HEAD of the checkout holding dir is
// at: what a session without isolation records when it starts, to diff
// against later (DiffRequest.From).
func (m *Manager) Head(ctx context.Context, dir string) (string, error) {
	h, err := m.commitOf(ctx, dir, "HEAD")
	if err != nil {
		return "", fmt.Errorf("workspace: HEAD of %s: %w", dir, err)
	}
	return h, nil
}

func (m *Manager) fillDiff(ctx context.Context, d *Diff, dir, from, tree string, req DiffRequest) (*Diff, error) {
	d.Base = from
	o := diffOpts{patch: !req.Stat, context: req.Context, paths: req.Paths}
	if o.context <= 0 {
		o.context = 3
	}
	files, patch, err := m.diffTrees(ctx, dir, from, tree, o)
	if err != nil {
		return nil, err
	}
	if files == nil {
		files = []FileChange{}
	}
	d.Files, d.Stat = files, statOfFiles(files)
	if !req.Stat {
		d.Patch, d.PatchOffset, d.PatchTotal, d.PatchMore = page(patch, req.Offset, req.Limit)
	}
	return d, nil
}

// page cuts the characters [offset, offset+limit) out of s (limit 0: to
// the end), returning the page, its offset (clamped), the total and
// whether more follows.
func page(s string, offset, limit int) (string, int, int, bool) {
	total := utf8.RuneCountInString(s)
	offset = max(0, min(offset, total))
	end := total
	if limit > 0 {
		end = min(total, offset+limit)
	}
	if offset == 0 && end == total {
		return s, 0, total, false
	}
	r := []rune(s)
	return string(r[offset:end]), offset, total, end < total
}
