module github.com/atm-agent-mcp/atm-agent-mcp/mailbridge

go 1.26.0
