// Command mockcodex stands in for the real Codex CLI in tests and demos
// (make build: bin/mockcodex). It is package
// github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockcodex, whose
// documentation describes its usage, prompt keywords and environment.
package main

import (
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockcodex"
)

func main() {
	os.Exit(mockcodex.Main())
}
