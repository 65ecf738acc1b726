package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
		told        = "incremental, new files told without git"
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
		{"a new file", func(t *testing.T) { write(t, wt, map[string]string{"new.txt": "new\n"}) }, told},
		{"an ignored file", func(t *testing.T) { write(t, wt, map[string]string{"x.log": "log\n"}) }, told},
		{"a new folder with files, one ignored inside", func(t *testing.T) {
			write(t, wt, map[string]string{"pkg/x/y.go": "package x\n", "pkg/z.go": "package pkg\n", "pkg/build/out.o": "obj\n"})
		}, told},
		// New files alone are told without git (track_new.go): each kind
		// of content, then mixed with edits, first touches and removals.
		{"a new binary file", func(t *testing.T) { write(t, wt, map[string]string{"blob.bin": "a\x00b\n"}) }, told},
		{"an empty new file", func(t *testing.T) { write(t, wt, map[string]string{"empty.txt": ""}) }, told},
		{"a new file without a final newline", func(t *testing.T) { write(t, wt, map[string]string{"tail.txt": "one\ntwo"}) }, told},
		{"a new file with NUL past 8000 bytes", func(t *testing.T) {
			write(t, wt, map[string]string{"late.txt": strings.Repeat("x", 8000) + "\x00\n"})
		}, told},
		{"a new file edited again", func(t *testing.T) { write(t, wt, map[string]string{"tail.txt": "one\ntwo\nthree\n"}) }, told},
		{"an edit and a new file in one turn", func(t *testing.T) {
			editLine(t, at("a.txt"), 7, "seven")
			write(t, wt, map[string]string{"pkg/w.go": "package pkg\n\nvar W = 1\n"})
		}, told},
		{"a new file removed again at once", func(t *testing.T) { os.Remove(at("empty.txt")) }, told},
		{"a base file first touched, and a new file", func(t *testing.T) {
			editLine(t, at("dir/sub/d.txt"), 3, "three")
			write(t, wt, map[string]string{"dir/sub/new.txt": "n\n"})
		}, incremental},
		{"only an edit, with new files told", func(t *testing.T) { editLine(t, at("a.txt"), 9, "nine") }, incremental},
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
	var was [4]int64
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			sameAsSnapshot(t, tr, m, p, "")
			f, i, u := tr.Looks()
			now := [4]int64{f, i, u, tr.told.Load()}
			kind := map[int]string{0: full, 1: incremental, 2: unchanged}
			var gotKind string
			for k := range 3 {
				if now[k] != was[k] {
					gotKind += kind[k]
				}
			}
			if now[3] != was[3] {
				gotKind = told
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

// TestTrackerNewFilesThroughGit: where attributes or configuration could
// make git read a new file otherwise (binary, filtered, too big), the
// tracker leaves new files to git, and its change is still a whole
// snapshot's.
func TestTrackerNewFilesThroughGit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("incremental looks need inotify")
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, repo, wt string)
	}{
		{"a .gitattributes in the tree", func(t *testing.T, repo, wt string) {
			if !exists(filepath.Join(wt, ".gitattributes")) {
				t.Fatal("the base has no .gitattributes")
			}
		}},
		{"an untracked .gitattributes in the worktree", func(t *testing.T, repo, wt string) {
			write(t, wt, map[string]string{"sub/.gitattributes": "*.dat -diff\n"})
		}},
		{"info/attributes", func(t *testing.T, repo, wt string) {
			write(t, filepath.Join(repo, ".git", "info"), map[string]string{"attributes": "*.dat binary\n"})
		}},
		{"core.attributesFile", func(t *testing.T, repo, wt string) {
			f := filepath.Join(t.TempDir(), "attributes")
			write(t, filepath.Dir(f), map[string]string{"attributes": "*.dat binary\n"})
			run(t, repo, "config", "core.attributesFile", f)
		}},
		{"the user's default attributes file", func(t *testing.T, repo, wt string) {
			xdg := t.TempDir()
			write(t, xdg, map[string]string{"git/attributes": "*.dat binary\n"})
			t.Setenv("XDG_CONFIG_HOME", xdg)
		}},
		{"core.bigFileThreshold", func(t *testing.T, repo, wt string) {
			run(t, repo, "config", "core.bigFileThreshold", "16")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := map[string]string{"a.txt": lines20}
			if tc.name == "a .gitattributes in the tree" {
				base[".gitattributes"] = "*.dat binary\n"
			}
			repo := newRepo(t, base)
			m := newManager(t, Owner{})
			p := place(t, m, repo, "attrs", "")
			tc.setup(t, repo, p.Path)
			tr := m.Track(p)
			defer tr.Close()
			for i, files := range []map[string]string{
				nil, // the first look
				{"x.dat": "text, but binary by attributes\nand longer than sixteen bytes\n"},
				{"sub/y.dat": "more\n"},
			} {
				write(t, p.Path, files)
				sameAsSnapshot(t, tr, m, p, fmt.Sprintf("look %d: ", i))
			}
			if n := tr.told.Load(); n != 0 {
				t.Errorf("%d looks told new files without git", n)
			}
			if _, inc, _ := tr.Looks(); inc != 2 {
				t.Errorf("%d incremental looks, want 2", inc)
			}
		})
	}
}

// sameAsSnapshot has the tracker look, and fails the test (what names the
// look) unless its change is a whole snapshot's.
func sameAsSnapshot(t *testing.T, tr *Tracker, m *Manager, p *Place, what string) {
	t.Helper()
	got, err := tr.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Changes(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%sthe tracker's change differs from a whole snapshot's (-want +got):\n%s", what, d)
	}
}
