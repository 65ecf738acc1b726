module github.com/atm-agent-mcp/atm-agent-mcp/registry

go 1.26.0
