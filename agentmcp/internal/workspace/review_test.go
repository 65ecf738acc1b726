package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"keep.txt": "k\n", "edit.txt": "1\n2\n3\n", "gone.txt": "g\n", "old.txt": lines20,
		".gitignore": "*.log\n"})
	m := newManager(t, Owner{})
	p := place(t, m, repo, "alice", "")
	// Committed, staged, unstaged and untracked work, and an ignored file.
	write(t, p.Path, map[string]string{"committed.txt": "c\n"})
	commitAll(t, p.Path, "committed")
	run(t, p.Path, "mv", "old.txt", "new.txt")
	write(t, p.Path, map[string]string{"edit.txt": "1\ntwo\n3\nfour\n", "untracked.txt": "u1\nu2\n", "debug.log": "ignored\n"})
	os.Remove(filepath.Join(p.Path, "gone.txt"))
	before := run(t, p.Path, "status", "--porcelain")
	indexBefore := read(t, filepath.Join(repo, ".git/worktrees/alice/index"))

	d, err := m.Diff(ctx, DiffRequest{Place: p})
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "committed.txt", Status: "A", Added: 1},
		{Path: "edit.txt", Status: "M", Added: 2, Removed: 1},
		{Path: "gone.txt", Status: "D", Removed: 1},
		{Path: "new.txt", OldPath: "old.txt", Status: "R"},
		{Path: "untracked.txt", Status: "A", Added: 2},
	}
	if diff := cmp.Diff(want, d.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	got := []any{d.Isolated, d.Base, d.Branch, d.Head, d.Uncommitted, d.Stat, d.PatchTotal, d.PatchMore}
	wantHead := run(t, p.Path, "rev-parse", "HEAD")
	wantMeta := []any{true, p.Base, "atm/alice", wantHead, true, DiffStat{5, 5, 2}, len([]rune(d.Patch)), false}
	if diff := cmp.Diff(wantMeta, got); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	for _, s := range []string{"+two\n", "+u2\n", "rename from old.txt\n", "deleted file mode"} {
		if !strings.Contains(d.Patch, s) {
			t.Errorf("patch lacks %q:\n%s", s, d.Patch)
		}
	}
	if strings.Contains(d.Patch, "debug.log") {
		t.Error("an ignored file is in the diff")
	}
	// Nothing of the worktree changed.
	if run(t, p.Path, "status", "--porcelain") != before || read(t, filepath.Join(repo, ".git/worktrees/alice/index")) != indexBefore {
		t.Error("Diff changed the worktree's status or index")
	}

	t.Run("pages", func(t *testing.T) {
		var parts []string
		for off := 0; ; {
			pg, err := m.Diff(ctx, DiffRequest{Place: p, Offset: off, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if pg.PatchOffset != off || len([]rune(pg.Patch)) > 100 {
				t.Fatalf("page at %d: offset %d, %d chars", off, pg.PatchOffset, len([]rune(pg.Patch)))
			}
			parts = append(parts, pg.Patch)
			off += len([]rune(pg.Patch))
			if !pg.PatchMore {
				break
			}
		}
		if strings.Join(parts, "") != d.Patch || len(parts) < 3 {
			t.Errorf("%d pages do not make the patch", len(parts))
		}
	})
	t.Run("stat and paths", func(t *testing.T) {
		s, err := m.Diff(ctx, DiffRequest{Place: p, Stat: true, Paths: []string{"edit.txt", "untracked.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		if s.Patch != "" || s.Stat != (DiffStat{2, 4, 1}) || len(s.Files) != 2 {
			t.Errorf("stat of two paths: %+v", s)
		}
	})
	t.Run("without isolation", func(t *testing.T) {
		start, err := m.Head(ctx, repo)
		if want := run(t, repo, "rev-parse", "HEAD"); err != nil || start != want {
			t.Fatalf("Head = %q, %v; want %s", start, err, want)
		}
		if _, err := m.Head(ctx, t.TempDir()); err == nil {
			t.Error("Head outside git: no error")
		}
		write(t, repo, map[string]string{"keep.txt": "k\nmore\n", "lead-new.txt": "n\n"})
		commitAll(t, repo, "lead work")
		write(t, repo, map[string]string{"edit.txt": "1\n"})
		s, err := m.Diff(ctx, DiffRequest{Dir: repo, From: start})
		if err != nil {
			t.Fatal(err)
		}
		want := []FileChange{{Path: "edit.txt", Status: "M", Removed: 2}, {Path: "keep.txt", Status: "M", Added: 1},
			{Path: "lead-new.txt", Status: "A", Added: 1}}
		if diff := cmp.Diff(want, s.Files); diff != "" || s.Isolated || s.Branch != "main" || !s.Uncommitted {
			t.Errorf("diff without isolation: %+v (-want +got):\n%s", s, diff)
		}
	})
}

func TestPage(t *testing.T) {
	tests := []struct {
		s             string
		offset, limit int
		page          string
		off, total    int
		more          bool
	}{
		{"héllo wörld", 0, 0, "héllo wörld", 0, 11, false},
		{"héllo wörld", 0, 5, "héllo", 0, 11, true},
		{"héllo wörld", 6, 5, "wörld", 6, 11, false},
		{"héllo wörld", 50, 5, "", 11, 11, false},
		{"", 0, 5, "", 0, 0, false},
	}
	for _, tt := range tests {
		page, off, total, more := page(tt.s, tt.offset, tt.limit)
		if page != tt.page || off != tt.off || total != tt.total || more != tt.more {
			t.Errorf("page(%q, %d, %d) = %q, %d, %d, %v", tt.s, tt.offset, tt.limit, page, off, total, more)
		}
	}
}
