module github.com/atm-agent-mcp/atm-agent-mcp/registry

go 1.26.0

require (
	github.com/atm-agent-mcp/atm-agent-mcp/atmclient v0.2.0
	github.com/google/go-cmp v0.7.0
)

require (
	github.com/gofrs/flock v0.13.2
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/atm-agent-mcp/atm-agent-mcp/atmclient => ../atmclient
