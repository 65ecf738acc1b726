package guard_test

import (
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/guard"
)

// A binary offers the guard as a subcommand (atm-agent-mcp calls it
// codex-guard) and names it in codexchild.Config.Guard.
func ExampleMain() {
	if len(os.Args) > 1 && os.Args[1] == "codex-guard" {
		os.Exit(guard.Main(os.Args[2:]))
	}
}
