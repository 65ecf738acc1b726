package gitctx

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestGitFactsWatched: the facts of a directory are read from the files
// once and kept while nothing they depend on changes; every change that
// alters them is seen on the next call: a checkout, a repository created
// between the directory and the root, the root moved away, a worktree's own
// HEAD, lost events. Changes to other files read nothing again.
func TestGitFactsWatched(t *testing.T) {
	w := newWatcher(t)
	base := t.TempDir()
	noGitAbove(t, base)
	root := filepath.Join(base, "repo")
	cwd := filepath.Join(root, "cmd", "tool")
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	type facts struct{ root, branch string }
	get := func(dir string) (facts, int64) {
		before := w.reads.Load()
		f := w.Facts(context.Background(), dir)
		return facts{orNull(f.Root), orNull(f.Branch)}, w.reads.Load() - before
	}
	nested := filepath.Join(root, "cmd")
	steps := []struct {
		name      string
		change    func()
		want      facts
		wantReads bool
	}{
		{"first call", func() {}, facts{root, "main"}, true},
		{"nothing changed", func() {}, facts{root, "main"}, false},
		{"other files", func() {
			write(filepath.Join(cwd, "main.go"), "package main\n")
			write(filepath.Join(root, ".git", "index"), "x")
			write(filepath.Join(root, "README.md"), "# repo\n")
		}, facts{root, "main"}, false},
		{"checkout", func() { write(filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/next\n") }, facts{root, "next"}, true},
		{"same size, in place", func() { write(filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/nexu\n") }, facts{root, "nexu"}, true},
		{"repository in between", func() { write(filepath.Join(nested, ".git", "HEAD"), "ref: refs/heads/inner\n") }, facts{nested, "inner"}, true},
		{"it goes again", func() { _ = os.RemoveAll(filepath.Join(nested, ".git")) }, facts{root, "nexu"}, true},
		{"root moved away, a plain tree in its place", func() {
			if err := os.Rename(root, root+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
		}, facts{"null", "null"}, true},
		{"repository created at the new root", func() { write(filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/fresh\n") }, facts{root, "fresh"}, true},
		{"lost events", func() {
			w.mu.Lock()
			w.eventLocked(-1, syscall.IN_Q_OVERFLOW, "")
			w.mu.Unlock()
		}, facts{root, "fresh"}, true},
		{"kept again", func() {}, facts{root, "fresh"}, false},
	}
	for _, st := range steps {
		st.change()
		got, reads := get(cwd)
		if got != st.want || (reads > 0) != st.wantReads {
			t.Errorf("%s: facts %+v after %d reads, want %+v (reads: %v)", st.name, got, reads, st.want, st.wantReads)
		}
	}

	// A directory that cannot be watched is read every time.
	missing := filepath.Join(base, "missing")
	for i := range 2 {
		if got, reads := get(missing); got != (facts{"null", "null"}) || reads == 0 {
			t.Errorf("missing directory, call %d: %+v after %d reads, want null facts read from the files", i, got, reads)
		}
	}
}

// TestGitFactsWatchedWorktree: a worktree's branch lives in its own git
// directory (under the main repository's), its origin in the main config.
func TestGitFactsWatchedWorktree(t *testing.T) {
	w := newWatcher(t)
	dir := t.TempDir()
	git := gitIn(t, dir)
	git("init", "-q", "-b", "main", "repo")
	git("-C", "repo", "commit", "-q", "--allow-empty", "-m", "one")
	git("-C", "repo", "worktree", "add", "-q", "-b", "feature/x", "../wt")
	wt := filepath.Join(dir, "wt")
	check := func(step, name, branch string) {
		t.Helper()
		f := w.Facts(context.Background(), wt)
		if orNull(f.Name) != name || orNull(f.Branch) != branch {
			t.Errorf("%s: name %s branch %s, want %s %s", step, orNull(f.Name), orNull(f.Branch), name, branch)
		}
	}
	check("start", "wt", "feature/x")
	git("-C", "wt", "checkout", "-q", "-b", "feature/y")
	check("checkout in the worktree", "wt", "feature/y")
	git("-C", "repo", "remote", "add", "origin", "https://example.com/acme/gadgets.git")
	check("origin added in the main repository", "gadgets", "feature/y")
	git("-C", "repo", "checkout", "-q", "-b", "other")
	check("checkout in the main repository", "gadgets", "feature/y")
}

// TestGitFactsWatchedSymlink: a directory reached through a symbolic link
// follows the link when it is pointed elsewhere.
func TestGitFactsWatchedSymlink(t *testing.T) {
	w := newWatcher(t)
	base := t.TempDir()
	for _, repo := range []string{"a", "b"} {
		p := filepath.Join(base, repo, ".git", "HEAD")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("ref: refs/heads/branch-"+repo+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "current")
	branch := func() string {
		t.Helper()
		return orNull(w.Facts(context.Background(), link).Branch)
	}
	for _, target := range []string{"a", "b", "a"} {
		_ = os.Remove(link)
		if err := os.Symlink(filepath.Join(base, target), link); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if got, want := branch(), "branch-"+target; got != want {
				t.Errorf("link to %s: branch %s, want %s", target, got, want)
			}
		}
	}
}

// TestGitFactsFollowChangesUnwatched: without inotify the facts are read
// from the files on every call, and follow the same changes.
func TestGitFactsFollowChangesUnwatched(t *testing.T) {
	w := &Watcher{fd: -1, broken: true, repos: &repoInfoCache{entries: map[string]repoInfo{}}}
	calls := followChanges(t, w)
	if n := w.reads.Load(); n != int64(calls) {
		t.Errorf("%d reads of the files for %d calls, want one per call", n, calls)
	}
}

// TestCachedGitFacts: Cached answers from the watch's cache only:
// nothing before the facts were read, the kept facts while nothing changed,
// nothing again after a change (a checkout), until they are read anew.
func TestCachedGitFacts(t *testing.T) {
	w := newWatcher(t)
	root := t.TempDir()
	head := filepath.Join(root, ".git", "HEAD")
	if err := os.MkdirAll(filepath.Dir(head), 0o755); err != nil {
		t.Fatal(err)
	}
	checkout := func(branch string) {
		t.Helper()
		if err := os.WriteFile(head, []byte("ref: refs/heads/"+branch+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkout("main")
	cached := func() string {
		t.Helper()
		before := w.reads.Load()
		f, ok := w.Cached(root)
		if n := w.reads.Load() - before; n != 0 {
			t.Errorf("Cached read the files %d times", n)
		}
		if !ok {
			return "(not cached)"
		}
		return orNull(f.Branch)
	}
	if got := cached(); got != "(not cached)" {
		t.Errorf("before the first read: %s", got)
	}
	w.Facts(context.Background(), root)
	if got := cached(); got != "main" {
		t.Errorf("after the read: %s, want main", got)
	}
	checkout("next")
	if got := cached(); got != "(not cached)" {
		t.Errorf("after a checkout: %s, want nothing", got)
	}
	w.Facts(context.Background(), root)
	if got := cached(); got != "next" {
		t.Errorf("after reading again: %s, want next", got)
	}
}
