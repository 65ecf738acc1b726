// Command atm-agent-mcp is an MCP server that runs coding agents (OpenAI
// Codex, and agents that speak the Agent Client Protocol, such as Claude's)
// as named members of an ATM team. Run "atm-agent-mcp --help".
package main

import (
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp"
)

func main() {
	os.Exit(agentmcp.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
