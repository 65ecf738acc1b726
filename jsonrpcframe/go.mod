module github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe

go 1.26.0

require github.com/google/go-cmp v0.7.0

require github.com/sourcegraph/jsonrpc2 v0.2.3
