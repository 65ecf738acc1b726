module github.com/atm-agent-mcp/atm-agent-mcp/agentmcp

go 1.26.0
