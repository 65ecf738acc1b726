package workspace_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
)

// A session gets its own worktree, works there, and at its close the
// worktree is kept because it holds work; the lead's checkout stays clean.
func Example() {
	dir, _ := os.MkdirTemp("", "workspace-example")
	defer os.RemoveAll(dir)
	repo, _ := filepath.EvalSymlinks(dir)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644)
	git("add", "-A")
	git("-c", "user.name=Lead", "-c", "user.email=lead@example.com", "commit", "-q", "-m", "base")

	ctx := context.Background()
	m, err := workspace.New(ctx, workspace.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := m.Create(ctx, workspace.Request{AgentID: "codex-01alice", Identity: "alice", Cwd: repo})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Branch, p.Path == filepath.Join(repo, ".atm/worktrees/alice"))

	// The agent edits in its worktree.
	os.WriteFile(filepath.Join(p.Path, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	d, _ := m.Diff(ctx, workspace.DiffRequest{Place: p, Stat: true})
	fmt.Println(d.Files[0].Path, d.Stat)

	r, _ := m.Release(ctx, p, false)
	fmt.Println("removed:", r.Removed, "branch:", r.Branch)
	fmt.Printf("lead status: %q\n", git("status", "--porcelain"))
	// Output:
	// atm/alice true
	// main.go 1 files changed, 2 insertions(+), 0 deletions(-)
	// removed: false branch: atm/alice
	// lead status: ""
}
