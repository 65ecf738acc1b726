module github.com/atm-agent-mcp/atm-agent-mcp/codexchild

go 1.26.0
