package codexchild

import (
	"context"
	"fmt"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// This file is the caller side of MCPServer: sending a request with the
// backend's own id, waiting for its one reply, and writing to the child.

// How wait ended.
type waitHow int

const (
	waitReply waitHow = iota
	waitTimeout
	waitCtx
)

// wait waits for the call's reply, abandoning the call on timeout (0 =
// none) or when ctx ends. It always returns the call's one reply.
func (b *MCPServer) wait(ctx context.Context, c *call, timeout time.Duration) (reply, waitHow) {
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case r := <-c.reply:
		return r, waitReply
	case <-expire:
		b.log.Warn("codex request timed out; cancelling it", "id", c.id.String(), "method", c.method, "after", timeout)
		b.abandon(c, abandonTimeout)
		return <-c.reply, waitTimeout
	case <-ctx.Done():
		b.abandon(c, abandonInterrupt)
		return <-c.reply, waitCtx
	}
}

// roundTrip sends a request of the backend's own and waits for its answer.
func (b *MCPServer) roundTrip(ctx context.Context, method string, params any, timeout time.Duration) (*jsonrpcframe.Message, error) {
	c, err := b.request(method, params, nil, nil)
	if err != nil {
		return nil, err
	}
	r, how := b.wait(ctx, c, timeout)
	switch {
	case r.err != nil:
		return nil, r.err
	case how == waitCtx:
		return nil, fmt.Errorf("codexchild: %s: %w", method, ctx.Err())
	case r.abandoned != notAbandoned:
		return nil, fmt.Errorf("codexchild: %s: cancelled", method)
	}
	return r.msg, nil
}

// request registers a call for a new request of t (nil: none) and writes
// it. blocked (optional) is called before the write waits for room in the
// child's stdin, or for the child's exit after a failed write; it may be
// called more than once: pass an idempotent function (Turn passes its
// Release, wrapped to run once).
func (b *MCPServer) request(method string, params any, t *turn, blocked func()) (*call, error) {
	m, err := jsonrpcframe.NewRequest(jsonrpcframe.ID{}, method, params)
	if err != nil {
		return nil, fmt.Errorf("codexchild: %s: %w", method, err)
	}
	return b.sendMessage(m, jsonrpcframe.ID{}, t, blocked)
}

// sendMessage gives m the backend's next id, registers the call (of t, for
// the caller's origID) and writes m; blocked is as for request. A turn on a
// known thread is refused while another turn runs there.
func (b *MCPServer) sendMessage(m *jsonrpcframe.Message, origID jsonrpcframe.ID, t *turn, blocked func()) (*call, error) {
	return b.send(m, func(id jsonrpcframe.ID) (*call, error) {
		if t != nil && t.threadID != "" && b.threads[t.threadID] != nil {
			return nil, fmt.Errorf("codexchild: turn on thread %s: %w", t.threadID, backend.ErrThreadBusy)
		}
		c := &call{id: id, origID: origID, method: m.Method, reply: make(chan reply, 1), turn: t}
		if t != nil && t.threadID != "" {
			b.threads[t.threadID] = c
		}
		return c, nil
	}, blocked)
}
