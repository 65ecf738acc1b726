package gitctx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// localRunner runs commands here, as a host's runner runs them there.
type localRunner struct{}

func (localRunner) Run(ctx context.Context, dir string, argv []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	return cmd.Output()
}

type downRunner struct{}

func (downRunner) Run(context.Context, string, []string) ([]byte, error) {
	return nil, errors.New(`host "box": the ssh connection is down`)
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestRemote: the facts git on another machine gives are those the
// Watcher reads from the files here, for a branch, a subdirectory, a
// detached HEAD, an origin, a repository with no commit and a directory
// outside any; a machine that cannot answer gives none.
func TestRemote(t *testing.T) {
	base := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", base)
	plain := filepath.Join(base, "plain")
	repo := filepath.Join(base, "repo")
	sub := filepath.Join(repo, "src", "pkg")
	detached := filepath.Join(base, "detached")
	empty := filepath.Join(base, "empty")
	for _, d := range []string{plain, sub, detached, empty} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "-q", "-b", "feature/x")
	git(t, repo, "remote", "add", "origin", "git@github.com:acme/widgets.git")
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "one")
	git(t, detached, "init", "-q", "-b", "main")
	git(t, detached, "commit", "-q", "--allow-empty", "-m", "one")
	git(t, detached, "checkout", "-q", "--detach")
	git(t, empty, "init", "-q", "-b", "trunk")

	w := newWatcher(t)
	for _, dir := range []string{plain, repo, sub, detached, empty} {
		want := w.Facts(context.Background(), dir)
		got, err := Remote(context.Background(), localRunner{}, dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Remote (-the watcher's +remote):\n%s", dir, diff)
		}
	}
	if got, _ := Remote(context.Background(), localRunner{}, sub); orNull(got.Name) != "widgets" || orNull(got.Branch) != "feature/x" || orNull(got.Root) != repo {
		t.Errorf("the subdirectory's facts: root %s name %s branch %s", orNull(got.Root), orNull(got.Name), orNull(got.Branch))
	}
	if got, err := Remote(context.Background(), downRunner{}, repo); err == nil || got.Root != nil {
		t.Errorf("a machine that cannot answer: %+v, %v; want no facts and its error", got, err)
	}
}
