package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
)

// TestMain isolates git from the developer's configuration (a global
// ~/.gitconfig could change branch names, hooks, identities), and runs
// the helper processes some tests start (see helperMain).
func TestMain(m *testing.M) {
	if mode := os.Getenv("WORKSPACE_TEST_HELPER"); mode != "" {
		os.Exit(helperMain(mode))
	}
	home, err := os.MkdirTemp("", "workspace-home-")
	if err != nil {
		panic(err)
	}
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, []byte("[user]\n\tname = Lead\n\temail = lead@example.com\n[init]\n\tdefaultBranch = main\n"), 0o600); err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Setenv("GIT_CONFIG_GLOBAL", cfg)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	os.RemoveAll(home)
	os.Exit(code)
}

// checkNoLeaks fails the test if it leaves goroutines running.
func checkNoLeaks(t testing.TB) { leakcheck.Check(t, "workspace.") }

// tempDir is t.TempDir with symbolic links resolved (git reports physical
// paths).
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// run runs git in dir and returns its trimmed output, failing the test
// on an error.
func run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// tryGit runs git in dir and returns its output and error.
func tryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// write writes files (path → content, relative to dir), making folders.
func write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func read(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// newRepo makes a repository with one commit of files (on branch main).
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(tempDir(t), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "-q")
	write(t, dir, files)
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "base")
	return dir
}

// commitAll commits everything in dir.
func commitAll(t testing.TB, dir, msg string) string {
	t.Helper()
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", msg)
	return run(t, dir, "rev-parse", "HEAD")
}

// newManager returns a Manager owned by owner (zero: this process), with
// a port registry in a temporary directory.
func newManager(t testing.TB, owner Owner) *Manager {
	t.Helper()
	ports, err := NewPorts(PortsConfig{Dir: tempDir(t), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(context.Background(), Config{Owner: owner, Ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// deadOwner is an owner whose process has exited: a child that ran and
// was reaped.
func deadOwner(t testing.TB) Owner {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	o := Self()
	o.PID, o.Start = cmd.ProcessState.Pid(), "1"
	return o
}

// liveOwner is an owner that runs until the test ends: a sleeping child.
func liveOwner(t testing.TB) Owner {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	o := Self()
	o.PID, o.Start = cmd.Process.Pid, procStart(cmd.Process.Pid)
	return o
}

// place asks m for a worktree of identity in repo (below sub, if given).
func place(t testing.TB, m *Manager, repo, identity, sub string) *Place {
	t.Helper()
	p, err := m.Create(context.Background(), Request{AgentID: "codex-" + identity, Identity: identity, Cwd: filepath.Join(repo, sub)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// lockOf returns the lock reason git has for the worktree at path ("" when
// unlocked).
func lockOf(t testing.TB, repo, path string) string {
	t.Helper()
	for _, e := range strings.Split(run(t, repo, "worktree", "list", "--porcelain"), "\n\n") {
		if strings.HasPrefix(e, "worktree "+path+"\n") {
			for _, l := range strings.Split(e, "\n") {
				if r, ok := strings.CutPrefix(l, "locked"); ok {
					return strings.TrimSpace(r) + "|locked"
				}
			}
			return ""
		}
	}
	t.Fatalf("no worktree %s in:\n%s", path, run(t, repo, "worktree", "list", "--porcelain"))
	return ""
}

// refs lists the refs of repo under prefix.
func refs(t testing.TB, repo, prefix string) []string {
	t.Helper()
	s := run(t, repo, "for-each-ref", "--format=%(refname)", prefix)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// leadState is everything of a lead's checkout that a merge may change:
// its HEAD, branch tip, status, and whether a merge is in progress.
func leadState(t testing.TB, repo string) string {
	t.Helper()
	mergeHead := exists(filepath.Join(repo, ".git", "MERGE_HEAD"))
	return fmt.Sprintf("head=%s status=%q merge_head=%v", run(t, repo, "rev-parse", "HEAD"),
		run(t, repo, "status", "--porcelain"), mergeHead)
}
