module github.com/atm-agent-mcp/atm-agent-mcp/testscripts

go 1.26.0
