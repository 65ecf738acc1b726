package workspace

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// TestCodexCommitsInWorktree runs each pinned real Codex CLI (codex exec
// of 0.171.0, the app-server pin, and of 0.153.4, the mcp-server pin,
// against the loopback model mock) in an agent's worktree under
// sandbox_mode "workspace-write", the mock's shell command committing
// there. With WritableRoots the commit lands on the agent's branch and
// nothing else of the repository is writable; without them, or without
// any one of them, it fails with the sandbox's "Read-only file system".
func TestCodexCommitsInWorktree(t *testing.T) {
	for _, which := range []realcodex.Which{realcodex.AppServer, realcodex.MCPServer} {
		t.Run(which.String(), func(t *testing.T) {
			bin := realcodex.Bin(t, which)
			v, err := realcodex.Version(context.Background(), bin)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("codex %s", v)
			codexCommits(t, bin)
		})
	}
}

func codexCommits(t *testing.T, bin string) {
	mock, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer mock.Close()
	h := realcodex.NewHome(t, mock.URL(), &realcodex.HomeOptions{ApprovalPolicy: "never", SandboxMode: "workspace-write"})
	ctx := context.Background()
	m := newManager(t, Owner{})

	// The repository must be outside /tmp, which workspace-write makes
	// writable by default: in the Codex home (under .cache).
	hd, err := filepath.EvalSymlinks(h.Dir)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(hd, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "init", "-q")
	write(t, repo, map[string]string{"main.go": "package main\n"})
	commitAll(t, repo, "base")
	common := filepath.Join(repo, ".git")

	tests := []struct {
		name   string
		drop   int // the root of WritableRoots left out; -1 none; -2 all
		commit bool
	}{
		{"with the writable roots", -1, true},
		{"without them", -2, false},
		{"without the worktree's git dir", 0, false},
		{"without objects", 1, false},
		{"without refs/heads/atm", 2, false},
		{"without logs/refs/heads/atm", 3, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := place(t, m, repo, "agent"+strconv.Itoa(i), "")
			roots, err := m.WritableRoots(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{filepath.Join(common, "worktrees", p.Name), filepath.Join(common, "objects"),
				filepath.Join(common, "refs/heads/atm"), filepath.Join(common, "logs/refs/heads/atm")}
			if strings.Join(roots, " ") != strings.Join(want, " ") {
				t.Fatalf("WritableRoots = %q, want %q", roots, want)
			}
			var given []string
			for j, r := range roots {
				if tt.drop == -1 || tt.drop >= 0 && j != tt.drop {
					given = append(given, strconv.Quote(r))
				}
			}
			write(t, p.Path, map[string]string{"feature.go": "package main\n\nfunc feature() {}\n"})
			evil := filepath.Join(common, "hooks", "post-merge-"+p.Name)
			// git's messages go to a file in /tmp (writable under
			// workspace-write): 0.153.4's exec does not show the
			// command's output, and the model mock clips it.
			gitErr := filepath.Join(t.TempDir(), "git.err")
			cmd := "{ git add -A && git commit -q -m 'agent commit'; } 2>" + gitErr + " && echo COMMITTED; " +
				"touch " + evil + "; git branch feature-" + p.Name + "; git config user.name mallory; true"
			proc := realcodex.Start(t, h, bin, "exec", "--skip-git-repo-check", "--cd", p.Path,
				"-c", "sandbox_workspace_write.writable_roots=["+strings.Join(given, ",")+"]",
				"RUN_SHELL\nCMD="+cmd)
			proc.Stdin.Close() // codex exec reads a piped stdin to its end
			out, _ := io.ReadAll(proc.Stdout)
			if err := proc.Stop(); err != nil {
				t.Logf("codex exec: %v", err)
			}
			// codex exec shows the command's output on stderr.
			out = append(out, read(t, proc.StderrPath)...)
			if b, err := os.ReadFile(gitErr); err == nil {
				out = append(out, b...)
			}
			head := run(t, p.Path, "log", "-1", "--format=%s")
			if got := head == "agent commit"; got != tt.commit {
				t.Errorf("committed: %v, want %v; codex said:\n%s", got, tt.commit, out)
			}
			if tt.commit {
				if st := run(t, p.Path, "status", "--porcelain"); st != "" {
					t.Errorf("status after the commit: %q", st)
				}
			} else if !strings.Contains(string(out), "Read-only file system") {
				t.Errorf("the failure is not the sandbox's:\n%s", out)
			}
			// Never writable: hooks, other branches, the config.
			if exists(evil) || run(t, repo, "branch", "--list", "feature-"+p.Name) != "" ||
				run(t, repo, "config", "user.name") == "mallory" {
				t.Error("the agent wrote outside its writable roots")
			}
		})
	}
}
