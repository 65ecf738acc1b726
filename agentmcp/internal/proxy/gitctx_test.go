package proxy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGitFacts compares the file-based facts with what git itself says, in
// a repository, a worktree, a detached HEAD, a subdirectory and outside git.
func TestGitFacts(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main", "repo")
	git("-C", "repo", "commit", "-q", "--allow-empty", "-m", "one")
	git("-C", "repo", "remote", "add", "origin", "git@github.com:acme/widgets.git")
	git("-C", "repo", "worktree", "add", "-q", "-b", "feature/x", "../wt")
	if err := os.MkdirAll(filepath.Join(dir, "repo", "a", "b"), 0o755); err != nil {
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
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		dir  string
		want repoFacts
	}{
		{"repo with origin", "repo", repoFacts{Root: str(filepath.Join(dir, "repo")), Name: str("widgets"), Branch: str("main")}},
		{"subdirectory", "repo/a/b", repoFacts{Root: str(filepath.Join(dir, "repo")), Name: str("widgets"), Branch: str("main")}},
		{"worktree", "wt", repoFacts{Root: str(filepath.Join(dir, "wt")), Name: str("widgets"), Branch: str("feature/x")}},
		{"detached", "detached", repoFacts{Root: str(filepath.Join(dir, "detached")), Name: str("detached"), Branch: str("detached@" + sha)}},
		{"outside git", "plain", repoFacts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gitFacts(context.Background(), filepath.Join(dir, tt.dir))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
