// Command mockacp stands in for a coding agent that speaks the Agent Client
// Protocol in tests and demos (make build: bin/mockacp). It is package
// github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockacp, whose
// documentation describes its prompt scripts and environment.
package main

import (
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockacp"
)

func main() {
	os.Exit(mockacp.Main())
}
