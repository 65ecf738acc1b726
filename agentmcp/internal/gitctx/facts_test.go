package gitctx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// gitIn returns a runner of git commands in dir (with a committer set),
// failing the test when one fails; it skips the test without git.
func gitIn(t *testing.T, dir string) func(args ...string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	return func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// noGitAbove keeps git's search, and ours, at dir and below for the rest
// of the test (GIT_CEILING_DIRECTORIES): the machine's temporary directory
// may itself lie in a git work tree.
func noGitAbove(t *testing.T, dir string) {
	t.Helper()
	t.Setenv(CeilingEnv, filepath.Dir(dir))
}

// TestGitFacts compares the file-based facts with what git itself says, in
// a repository, a worktree, a detached HEAD, a subdirectory and outside git.
func TestGitFacts(t *testing.T) {
	w := newWatcher(t)
	dir := t.TempDir()
	noGitAbove(t, dir)
	git := gitIn(t, dir)
	git("init", "-q", "-b", "main", "repo")
	git("-C", "repo", "commit", "-q", "--allow-empty", "-m", "one")
	git("-C", "repo", "remote", "add", "origin", "git@github.com:acme/widgets.git")
	git("-C", "repo", "worktree", "add", "-q", "-b", "feature/x", "../wt")
	if err := os.MkdirAll(filepath.Join(dir, "repo", "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "trunk", "detached")
	git("-C", "detached", "commit", "-q", "--allow-empty", "-m", "one")
	out, _ := exec.Command("git", "-C", filepath.Join(dir, "detached"), "rev-parse", "HEAD").Output()
	git("-C", "detached", "checkout", "-q", "--detach")
	sha := string(out[:7])
	plain := filepath.Join(dir, "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	// An empty .git directory (no HEAD) is no repository, for git either.
	if err := os.MkdirAll(filepath.Join(dir, "emptygit", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		dir     string
		ceiling string // GIT_CEILING_DIRECTORIES, relative to dir
		want    Facts
	}{
		{"repo with origin", "repo", "", Facts{Root: str(filepath.Join(dir, "repo")), Name: str("widgets"), Branch: str("main")}},
		{"subdirectory", "repo/a/b", "", Facts{Root: str(filepath.Join(dir, "repo")), Name: str("widgets"), Branch: str("main")}},
		{"worktree", "wt", "", Facts{Root: str(filepath.Join(dir, "wt")), Name: str("widgets"), Branch: str("feature/x")}},
		{"detached", "detached", "", Facts{Root: str(filepath.Join(dir, "detached")), Name: str("detached"), Branch: str("detached@" + sha)}},
		{"outside git", "plain", "", Facts{}},
		{"an empty .git", "emptygit", "", Facts{}},
		{"below a ceiling at the work tree", "repo/a", "repo", Facts{}},
		{"the work tree below a ceiling", "repo/a/b/c", "repo/a", Facts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ceiling != "" {
				t.Setenv(CeilingEnv, filepath.Join(dir, tt.ceiling))
			}
			got := w.Facts(context.Background(), filepath.Join(dir, tt.dir))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestGitFactsFollowChanges: the facts are cached between turns, yet a
// checkout (HEAD rewritten), a new origin and a removed repository show at
// once.
func TestGitFactsFollowChanges(t *testing.T) { followChanges(t, newWatcher(t)) }

// followChanges runs the steps of TestGitFactsFollowChanges and returns how
// many times it asked for the facts.
func followChanges(t *testing.T, w *Watcher) int {
	root := t.TempDir()
	noGitAbove(t, root)
	gitDir := filepath.Join(root, ".git")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(gitDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(gitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write("HEAD", "ref: refs/heads/main\n")
	facts := func() (name, branch string) {
		f := w.Facts(context.Background(), root)
		if f.Root == nil {
			return "", ""
		}
		return *f.Name, *f.Branch
	}
	steps := []struct {
		change     func()
		name, want string
	}{
		{func() {}, filepath.Base(root), "main"},
		{func() {}, filepath.Base(root), "main"}, // cached
		{func() { write("HEAD", "ref: refs/heads/feature/login\n") }, filepath.Base(root), "feature/login"},
		{func() { write("HEAD", "ref: refs/heads/feature/logon\n") }, filepath.Base(root), "feature/logon"}, // same size
		{func() { write("config", "[remote \"origin\"]\n\turl = https://example.com/acme/gadgets.git\n") }, "gadgets", "feature/logon"},
		{func() { _ = os.RemoveAll(gitDir) }, "", ""},
	}
	for i, st := range steps {
		st.change()
		name, branch := facts()
		if name != st.name || branch != st.want {
			t.Errorf("step %d: name %q branch %q, want %q %q", i, name, branch, st.name, st.want)
		}
	}
	return len(steps)
}

// BenchmarkGitFacts reads the facts of a repository whose files did not
// change, as on every turn of a session (from a subdirectory).
func BenchmarkGitFacts(b *testing.B) {
	w := newWatcher(b)
	root := b.TempDir()
	sub := filepath.Join(root, "cmd", "tool")
	old := time.Now().Add(-time.Hour)
	for name, content := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": "[remote \"origin\"]\n\turl = git@github.com:acme/widgets.git\n"} {
		p := filepath.Join(root, ".git", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if f := w.Facts(context.Background(), sub); f.Branch == nil || *f.Branch != "main" {
			b.Fatal("no branch")
		}
	}
}
