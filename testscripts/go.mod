module github.com/atm-agent-mcp/atm-agent-mcp/testscripts

go 1.26.0

require (
	github.com/atm-agent-mcp/atm-agent-mcp/agentmcp v0.2.0
	github.com/atm-agent-mcp/atm-agent-mcp/atmclient v0.2.0
	github.com/atm-agent-mcp/atm-agent-mcp/codexchild v0.2.0
	github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe v0.2.0
	github.com/chromedp/chromedp v0.23.0
	github.com/creack/pty v1.1.24
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/mod v0.43.0
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/alecthomas/kong v1.17.0 // indirect
	github.com/atm-agent-mcp/atm-agent-mcp/mailbridge v0.2.0 // indirect
	github.com/atm-agent-mcp/atm-agent-mcp/registry v0.2.0 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/gofrs/flock v0.13.2 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/sourcegraph/jsonrpc2 v0.2.3 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
)

replace github.com/atm-agent-mcp/atm-agent-mcp/agentmcp => ../agentmcp

replace github.com/atm-agent-mcp/atm-agent-mcp/atmclient => ../atmclient

replace github.com/atm-agent-mcp/atm-agent-mcp/codexchild => ../codexchild

replace github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe => ../jsonrpcframe

replace github.com/atm-agent-mcp/atm-agent-mcp/mailbridge => ../mailbridge

replace github.com/atm-agent-mcp/atm-agent-mcp/registry => ../registry
