module github.com/atm-agent-mcp/atm-agent-mcp/codexchild

go 1.26.0

require (
	github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe v0.2.0
	github.com/google/go-cmp v0.7.0
	github.com/google/jsonschema-go v0.4.3
	github.com/sourcegraph/jsonrpc2 v0.2.3
)

replace github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe => ../jsonrpcframe
