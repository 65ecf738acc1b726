package codexchild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestThreadEnvConfig: a thread's Env and WritableRoots as config
// overrides: one dotted key per variable (a user's set table keeps its
// other variables), merged into a caller's own policy object or set map;
// the roots appended to a caller's list, and never given to a read-only
// thread.
func TestThreadEnvConfig(t *testing.T) {
	env := map[string]string{"ATM_WORKTREE": "/r/.atm/worktrees/a", "ATM_BRANCH": "atm/a"}
	roots := []string{"/r/.git/worktrees/a", "/r/.git/objects"}
	tests := []struct {
		name string
		p    backend.ThreadParams
		want map[string]any
	}{
		{"nothing", backend.ThreadParams{}, nil},
		{"env", backend.ThreadParams{Env: env}, map[string]any{
			"shell_environment_policy.set.ATM_WORKTREE": "/r/.atm/worktrees/a", "shell_environment_policy.set.ATM_BRANCH": "atm/a"}},
		{"env into the caller's policy", backend.ThreadParams{Env: env, Options: Options{Config: map[string]any{
			"shell_environment_policy": map[string]any{"inherit": "core", "set": map[string]any{"X": "1"}}}}},
			map[string]any{"shell_environment_policy": map[string]any{"inherit": "core",
				"set": map[string]any{"X": "1", "ATM_WORKTREE": "/r/.atm/worktrees/a", "ATM_BRANCH": "atm/a"}}}},
		{"env into the caller's set", backend.ThreadParams{Env: env, Options: Options{Config: map[string]any{
			"shell_environment_policy.set": map[string]any{"X": "1"}}}},
			map[string]any{"shell_environment_policy.set": map[string]any{"X": "1", "ATM_WORKTREE": "/r/.atm/worktrees/a", "ATM_BRANCH": "atm/a"}}},
		{"roots", backend.ThreadParams{WritableRoots: roots, Options: Options{Sandbox: "workspace-write"}},
			map[string]any{"sandbox_workspace_write.writable_roots": []any{"/r/.git/worktrees/a", "/r/.git/objects"}}},
		{"roots after the caller's", backend.ThreadParams{WritableRoots: roots, Options: Options{Config: map[string]any{
			"sandbox_workspace_write.writable_roots": []any{"/data"}}}},
			map[string]any{"sandbox_workspace_write.writable_roots": []any{"/data", "/r/.git/worktrees/a", "/r/.git/objects"}}},
		{"no roots under read-only", backend.ThreadParams{WritableRoots: roots, Options: Options{Sandbox: "read-only"}}, nil},
		{"no roots under a read-only sandbox_mode", backend.ThreadParams{WritableRoots: roots, Options: Options{
			Config: map[string]any{"sandbox_mode": "read-only"}}}, map[string]any{"sandbox_mode": "read-only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cloneJSON(t, optionsOf(tt.p).Config)
			got := codexConfig(tt.p)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("codexConfig (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, cloneJSON(t, optionsOf(tt.p).Config)); diff != "" {
				t.Errorf("the caller's Config changed (-before +after):\n%s", diff)
			}
		})
	}
}

// cloneJSON copies a config map deeply enough to compare it later.
func cloneJSON(t *testing.T, m map[string]any) any {
	t.Helper()
	if m == nil {
		return nil
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			c := map[string]any{}
			for k, e := range x {
				c[k] = walk(e)
			}
			return c
		case []any:
			c := make([]any, len(x))
			for i, e := range x {
				c[i] = walk(e)
			}
			return c
		}
		return v
	}
	return walk(m)
}

// TestThreadEnv runs a thread in a git worktree on every target (mockcodex
// and the real Codex, both protocols) with the session's environment and
// the writable roots git needs, under workspace-write: its shell command
// sees the environment and commits on the worktree's branch. On
// app-server, a new process that resumes the thread gives the same. Under
// the read-only sandbox, the roots are not given and the real Codex
// cannot commit.
func TestThreadEnv(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			cfg, cwd := tg.setup(t)
			repo := gitRepo(t, cwd)
			wt, roots := gitWorktree(t, repo, "a")
			env := map[string]string{"ATM_WORKTREE": wt, "ATM_BRANCH": "atm/a", "ATM_PORT_BASE": "20010", "ATM_PORT_COUNT": "10"}
			params := backend.ThreadParams{Cwd: wt, Env: env, WritableRoots: roots,
				Options: Options{ApprovalPolicy: "never", Sandbox: "workspace-write"}}
			cmd := `(env | grep -E '^ATM_(BRANCH|PORT_|WORKTREE)' | sort > env.txt && git add env.txt && git commit -q -m 'agent commit') > out.log 2>&1`
			b := newTestBackend(t, cfg)
			res, err := b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{Prompt: "RUN_SHELL CMD=" + cmd, Params: params})
			if err != nil {
				t.Fatal(err)
			}
			want := "ATM_BRANCH=atm/a\nATM_PORT_BASE=20010\nATM_PORT_COUNT=10\nATM_WORKTREE=" + wt + "\n"
			if got := readFile(t, filepath.Join(wt, "env.txt")); got != want {
				t.Errorf("the command's environment:\n%s\nwant:\n%s\nresult: %s\nits output: %s", got, want, res.Text, readFile(t, filepath.Join(wt, "out.log")))
			}
			if got := git(t, repo, "log", "-1", "--format=%s", "atm/a"); got != "agent commit" {
				t.Errorf("atm/a's last commit is %q, want the agent's; result: %s", got, res.Text)
			}
			if st := git(t, repo, "status", "--porcelain"); st != "" {
				t.Errorf("the main checkout changed: %q", st)
			}
			if tg.kind == KindAppServer {
				// A new process resumes the thread: the config goes with
				// thread/resume.
				if err := b.Close(ctxFor(t, 20*time.Second)); err != nil {
					t.Fatal(err)
				}
				b2 := newTestBackend(t, cfg)
				b = b2
				cmd2 := `env | grep -E '^ATM_(BRANCH|PORT_|WORKTREE)' | sort > env2.txt && git add -A && git commit -q -m 'after resume'`
				if _, err := b2.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "RUN_SHELL CMD=" + cmd2, Params: params}); err != nil {
					t.Fatal(err)
				}
				if got := readFile(t, filepath.Join(wt, "env2.txt")); got != want {
					t.Errorf("after a resume, the command's environment:\n%s\nwant:\n%s", got, want)
				}
				if got := git(t, repo, "log", "-1", "--format=%s", "atm/a"); got != "after resume" {
					t.Errorf("after a resume, atm/a's last commit is %q", got)
				}
			}
			if !tg.real {
				return // mockcodex has no sandbox
			}
			ro := params
			ro.Options = Options{ApprovalPolicy: "never", Sandbox: "read-only"}
			wt2, roots2 := gitWorktree(t, repo, "b")
			ro.Cwd, ro.WritableRoots = wt2, roots2
			res, err = b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{Prompt: "RUN_SHELL CMD=git commit -q --allow-empty -m ro && echo COMMITTED", Params: ro})
			if err != nil {
				t.Fatal(err)
			}
			if got := git(t, repo, "log", "-1", "--format=%s", "atm/b"); got == "ro" {
				t.Errorf("a read-only thread committed: %s", res.Text)
			}
		})
	}
}

// gitRepo makes a repository with one commit below dir.
func gitRepo(t *testing.T, dir string) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(d, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "config", "user.name", "agent")
	git(t, repo, "config", "user.email", "agent@example.com")
	if err := os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte("/.atm/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	return repo
}

// gitWorktree adds a worktree on branch atm/name, as workspace does, and
// returns it with the writable roots its commits need (workspace's
// WritableRoots).
func gitWorktree(t *testing.T, repo, name string) (string, []string) {
	t.Helper()
	wt := filepath.Join(repo, ".atm", "worktrees", name)
	git(t, repo, "worktree", "add", "-q", "-b", "atm/"+name, wt)
	roots := strings.Split(git(t, wt, "rev-parse", "--path-format=absolute", "--absolute-git-dir",
		"--git-path", "objects", "--git-path", "refs/heads/atm", "--git-path", "logs/refs/heads/atm"), "\n")
	for _, r := range roots[2:] {
		if err := os.MkdirAll(r, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return wt, roots
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.CommandContext(context.Background(), "git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v", err)
	}
	return string(b)
}
