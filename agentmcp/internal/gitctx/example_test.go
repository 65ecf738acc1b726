package gitctx_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
)

// A repository's facts, read from its files: the root, the name (from the
// origin remote's URL) and the branch (from HEAD).
func Example() {
	root, _ := os.MkdirTemp("", "gitctx")
	defer os.RemoveAll(root)
	repo := filepath.Join(root, "work")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	os.MkdirAll(filepath.Join(repo, "cmd"), 0o755)
	os.WriteFile(filepath.Join(repo, ".git", "HEAD"), []byte("ref: refs/heads/feature/login\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".git", "config"), []byte("[remote \"origin\"]\n\turl = git@github.com:acme/webshop.git\n"), 0o644)

	w := gitctx.New(gitctx.Config{})
	defer w.Close()
	f := w.Facts(context.Background(), filepath.Join(repo, "cmd"))
	fmt.Println(*f.Root == repo, *f.Name, *f.Branch)
	// Output: true webshop feature/login
}
