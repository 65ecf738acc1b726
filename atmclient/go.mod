module github.com/atm-agent-mcp/atm-agent-mcp/atmclient

go 1.26.0
