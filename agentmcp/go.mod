module github.com/atm-agent-mcp/atm-agent-mcp/agentmcp

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/alecthomas/kong v1.17.0
	github.com/atm-agent-mcp/atm-agent-mcp/atmclient v0.2.0
	github.com/atm-agent-mcp/atm-agent-mcp/codexchild v0.2.0
	github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe v0.2.0
	github.com/atm-agent-mcp/atm-agent-mcp/registry v0.2.0
	github.com/gofrs/flock v0.13.2
	github.com/google/go-cmp v0.7.0
	github.com/sourcegraph/jsonrpc2 v0.2.3
)

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
)

require (
	github.com/atm-agent-mcp/atm-agent-mcp/mailbridge v0.2.0
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/atm-agent-mcp/atm-agent-mcp/atmclient => ../atmclient

replace github.com/atm-agent-mcp/atm-agent-mcp/codexchild => ../codexchild

replace github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe => ../jsonrpcframe

replace github.com/atm-agent-mcp/atm-agent-mcp/mailbridge => ../mailbridge

replace github.com/atm-agent-mcp/atm-agent-mcp/registry => ../registry
