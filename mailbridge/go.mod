module github.com/atm-agent-mcp/atm-agent-mcp/mailbridge

go 1.26.0

require (
	github.com/atm-agent-mcp/atm-agent-mcp/atmclient v0.2.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/google/go-cmp v0.7.0
)

require (
	github.com/gofrs/flock v0.13.2 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/atm-agent-mcp/atm-agent-mcp/atmclient => ../atmclient
