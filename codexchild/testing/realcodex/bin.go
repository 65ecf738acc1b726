package realcodex

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/codexversion"
)

// Which names one of the pinned Codex CLIs.
type Which int

const (
	// MCPServer is the CLI with `codex mcp-server` (0.153.4), from
	// $ATM_CODEX_MCP_BIN.
	MCPServer Which = iota
	// AppServer is the CLI with `codex app-server` (the pinned version,
	// [Which.Pinned]), from $ATM_CODEX_APP_BIN.
	AppServer
)

// RequireEnv is the environment variable that turns a missing binary from a
// skip into a failure when set to "1" (CI sets it).
const RequireEnv = "ATM_REQUIRE_REAL_CODEX"

// EnvVar returns the environment variable that holds the binary's path.
func (w Which) EnvVar() string {
	if w == AppServer {
		return "ATM_CODEX_APP_BIN"
	}
	return "ATM_CODEX_MCP_BIN"
}

// Pinned returns the version make test installs for this CLI (the
// Makefile's CODEX_MCP_VERSION or CODEX_APP_VERSION, kept equal to
// codexchild's TestedMCPServerCodex and TestedAppServerCodex by a test).
func (w Which) Pinned() string {
	if w == AppServer {
		return codexversion.TestedAppServer
	}
	return codexversion.TestedMCPServer
}

// Subcommand returns the codex subcommand that serves the protocol:
// "mcp-server" or "app-server".
func (w Which) Subcommand() string {
	if w == AppServer {
		return "app-server"
	}
	return "mcp-server"
}

// String returns "mcp-server" or "app-server".
func (w Which) String() string { return w.Subcommand() }

// Bin returns the absolute path of the real Codex binary named by which's
// environment variable. When the variable is unset or the file is not an
// executable, the test is skipped with a loud message, or fails if
// ATM_REQUIRE_REAL_CODEX=1. Under -short (make check) it always skips.
func Bin(t testing.TB, which Which) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("SKIP real Codex (%s): -short (make check) runs no real Codex", which)
	}
	env := which.EnvVar()
	path := os.Getenv(env)
	var problem string
	if path == "" {
		problem = env + " not set"
	} else if fi, err := os.Stat(path); err != nil {
		problem = fmt.Sprintf("%s=%s: %v", env, path, err)
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		problem = fmt.Sprintf("%s=%s is not an executable file", env, path)
	}
	if problem == "" {
		return path
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("real Codex (%s) required (%s=1) but unavailable: %s; run `make real-codex`", which, RequireEnv, problem)
		return ""
	}
	t.Skipf("SKIP real Codex (%s): %s; run `make test` (it installs the pinned CLIs with `make real-codex`)", which, problem)
	return ""
}

// Version runs `bin --version` and returns the version it reports, such as
// "0.153.4".
func Version(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("realcodex: %s --version: %w", bin, err)
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return "", fmt.Errorf("realcodex: %s --version printed nothing", bin)
	}
	return f[len(f)-1], nil
}
