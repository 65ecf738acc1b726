// Command atm-agent-mcp is an MCP server that runs OpenAI Codex agents as
// named members of an ATM team. Run "atm-agent-mcp --help".
package main

import (
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp"
)

func main() {
	os.Exit(agentmcp.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
