module github.com/atm-agent-mcp/atm-agent-mcp/atmclient

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	golang.org/x/sys v0.49.0
)

require github.com/gofrs/flock v0.13.2
