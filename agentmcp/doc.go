// Package agentmcp is the atm-agent-mcp program: [Main] runs its command
// line (internal/cli), which resolves the configuration (internal/config)
// and runs the MCP proxy (internal/proxy).
package agentmcp
