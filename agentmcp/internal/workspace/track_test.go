package workspace

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTrackerMatchesChanges runs one worktree through a seeded series of
// changes; after each, a Tracker's look must give exactly what a whole
// snapshot (Manager.Changes) gives, and be of the kind expected: no git
// when nothing changed, git over the changed paths for edits, a full
// look where the tracker cannot tell (a commit, a .gitignore, a folder
// moved away).
func TestTrackerMatchesChanges(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("incremental looks need inotify")
	}
	ctx := context.Background()
	repo := newRepo(t, map[string]string{
		"a.txt": lines20, "b.txt": lines20, "dir/c.txt": lines20, "dir/sub/d.txt": lines20,
		".gitignore": "*.log\nbuild/\n", "keep/e.txt": lines20,
	})
	m := newManager(t, Owner{})
	p := place(t, m, repo, "tracked", "")
	tr := m.Track(p)
	defer tr.Close()
	wt := p.Path
	at := func(rel string) string { return filepath.Join(wt, rel) }

	const (
		full        = "full"
		incremental = "incremental"
		unchanged   = "unchanged"
	)
	steps := []struct {
		name string
		do   func(t *testing.T)
		kind string
	}{
		{"first look", func(t *testing.T) {}, full},
		{"nothing changed", func(t *testing.T) {}, unchanged},
		{"a line edited", func(t *testing.T) { editLine(t, at("a.txt"), 5, "five") }, incremental},
		{"the same file again, other lines", func(t *testing.T) { insertAfter(t, at("a.txt"), 12, "inserted") }, incremental},
		{"a new file", func(t *testing.T) { write(t, wt, map[string]string{"new.txt": "new\n"}) }, incremental},
		{"an ignored file", func(t *testing.T) { write(t, wt, map[string]string{"x.log": "log\n"}) }, incremental},
		{"a new folder with files, one ignored inside", func(t *testing.T) {
			write(t, wt, map[string]string{"pkg/x/y.go": "package x\n", "pkg/z.go": "package pkg\n", "pkg/build/out.o": "obj\n"})
		}, incremental},
		{"an ignored folder", func(t *testing.T) { write(t, wt, map[string]string{"build/out/bin": "x\n"}) }, incremental},
		{"a file in the ignored folder", func(t *testing.T) { write(t, wt, map[string]string{"build/out/bin2": "x\n"}) }, unchanged},
		{"a base file deleted", func(t *testing.T) { os.Remove(at("b.txt")) }, incremental},
		{"a file renamed", func(t *testing.T) { os.Rename(at("dir/c.txt"), at("dir/renamed.txt")) }, incremental},
		{"an edit undone", func(t *testing.T) { os.WriteFile(at("a.txt"), []byte(lines20), 0o644) }, incremental},
		{"made executable", func(t *testing.T) { os.Chmod(at("keep/e.txt"), 0o755) }, incremental},
		{"a symbolic link", func(t *testing.T) { os.Symlink("a.txt", at("link")) }, incremental},
		{"a new file removed again", func(t *testing.T) { os.Remove(at("new.txt")) }, incremental},
		{"a file replaced by rename", func(t *testing.T) {
			write(t, wt, map[string]string{".a.tmp": lines20 + "appended\n"})
			os.Rename(at(".a.tmp"), at("a.txt"))
		}, incremental},
		{"a folder removed", func(t *testing.T) { os.RemoveAll(at("dir/sub")) }, incremental},
		// A commit moves no file: git tells the base again, which is the
		// same commit.
		{"a commit", func(t *testing.T) { commitAll(t, wt, "agent") }, unchanged},
		{"after the commit, an edit", func(t *testing.T) { editLine(t, at("pkg/z.go"), 1, "package zz") }, incremental},
		{"a .gitignore changed", func(t *testing.T) {
			write(t, wt, map[string]string{".gitignore": "*.log\nbuild/\nkeep/\n", "keep/f.txt": "f\n"})
		}, full},
		{"a folder moved away", func(t *testing.T) { os.Rename(at("pkg"), filepath.Join(t.TempDir(), "pkg")) }, full},
		{"the lead commits", func(t *testing.T) {
			write(t, repo, map[string]string{"lead.txt": "lead\n"})
			commitAll(t, repo, "lead")
		}, unchanged},
		{"the agent merges the lead's work: a new base", func(t *testing.T) { run(t, wt, "merge", "-q", "--no-edit", "main") }, full},
		{"then an edit", func(t *testing.T) { editLine(t, at("a.txt"), 2, "two") }, incremental},
	}
	var was [3]int64
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			got, err := tr.Changes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.Changes(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("the tracker's change differs from a whole snapshot's (-want +got):\n%s", d)
			}
			f, i, u := tr.Looks()
			now := [3]int64{f, i, u}
			kind := map[int]string{0: full, 1: incremental, 2: unchanged}
			var gotKind string
			for k := range now {
				if now[k] != was[k] {
					gotKind += kind[k]
				}
			}
			was = now
			if gotKind != st.kind {
				t.Errorf("look: %s, want %s", gotKind, st.kind)
			}
		})
	}
	// Closing removes the tracker's index.
	tr.Close()
	if exists(filepath.Join(run(t, wt, "rev-parse", "--absolute-git-dir"), "atm-radar.index")) {
		t.Error("the tracker's index is left behind")
	}
}
