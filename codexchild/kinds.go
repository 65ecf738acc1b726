package codexchild

import (
	"context"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Kind names a Codex protocol (Config.Kind, backend.Status.Protocol).
type Kind string

// The Codex protocols.
const (
	KindMCPServer Kind = "mcp-server"
	KindAppServer Kind = "app-server"
)

// Passthrough is what a backend whose child is itself an MCP server
// (mcp-server) offers besides turns. A backend that has it only for some
// children (the auto backend) returns backend.ErrUnsupported for the
// others.
type Passthrough interface {
	// Forward sends any other request to the child verbatim (its id is
	// replaced by the backend's own and restored on the reply) and returns
	// the child's reply verbatim.
	Forward(ctx context.Context, req *jsonrpcframe.Message) (*jsonrpcframe.Message, error)
	// Notify sends a notification to the child verbatim.
	Notify(ctx context.Context, n *jsonrpcframe.Message) error
}
