// Package agentmcp is the atm-agent-mcp MCP proxy.
package agentmcp
