package mcpconn

import (
	"context"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// request sends a server→client request with the proxy's own id and waits
// for the answer, ctx or the client's departure.
func (c *outbox) request(ctx context.Context, method string, params any) (*jsonrpcframe.Message, error) {
	c.emu.Lock()
	if c.isGone() {
		c.emu.Unlock()
		return nil, ErrClientGone
	}
	c.nextID++
	id := jsonrpcframe.IntID(c.nextID)
	ch := make(chan *jsonrpcframe.Message, 1)
	c.pending[id] = ch
	c.emu.Unlock()
	defer func() {
		c.emu.Lock()
		delete(c.pending, id)
		c.emu.Unlock()
	}()
	m, err := jsonrpcframe.NewRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	if err := c.write(m); err != nil {
		return nil, err
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, ErrClientGone
		}
		return resp, nil
	case <-ctx.Done():
		// Tell the client the request is moot (MCP cancellation).
		_ = c.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "no longer needed"})
		return nil, ctx.Err()
	}
}

// deliver routes a response from the client to the request waiting for it;
// it reports false for an unknown id.
func (c *outbox) deliver(m *jsonrpcframe.Message) bool {
	c.emu.Lock()
	ch, ok := c.pending[m.ID]
	if ok {
		delete(c.pending, m.ID)
	}
	c.emu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}
