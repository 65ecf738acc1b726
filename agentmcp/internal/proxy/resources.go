package proxy

import (
	"context"
	"slices"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
)

// The connection's mcpconn.ResourceHandler: the sessions as MCP resources,
// served by the tools (tools/resources.go).

func (h handler) ListResources(ctx context.Context) ([]mcpconn.Resource, error) {
	return h.s.tools.ListResources(ctx)
}

func (h handler) ResourceTemplates(ctx context.Context) ([]mcpconn.ResourceTemplate, error) {
	return h.s.tools.ResourceTemplates(ctx)
}

func (h handler) ReadResource(ctx context.Context, uri string) ([]mcpconn.ResourceContents, error) {
	return h.s.tools.ReadResource(ctx, uri)
}

var _ mcpconn.ResourceHandler = handler{}

// resourceSettle is how long resourceNotes waits after a change before it
// looks: the changes of one turn (its result, its first message) then go
// out as one notification.
const resourceSettle = 100 * time.Millisecond

// resourceNotes tells the client when the list of resources changes
// (Conn.ResourcesChanged): the session manager kicks it (session.Config's
// Changed, on any goroutine, never waiting), and its own goroutine,
// after a short pause, compares the resources' URIs with the ones of the
// last notification and notifies only when they differ.
type resourceNotes struct {
	kick chan struct{} // 1-buffered: a kick while one is pending is one kick
}

func newResourceNotes() *resourceNotes { return &resourceNotes{kick: make(chan struct{}, 1)} }

// changed is session.Config.Changed.
func (n *resourceNotes) changed() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// run notifies until ctx ends; list gives the URIs of the resources now.
func (n *resourceNotes) run(ctx context.Context, list func() []string, notify func()) {
	last := list()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(resourceSettle):
		}
		select { // a kick during the pause is seen by the list below
		case <-n.kick:
		default:
		}
		if now := list(); !slices.Equal(now, last) {
			last = now
			notify()
		}
	}
}
