module github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe

go 1.26.0
