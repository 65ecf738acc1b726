package codexchild

import (
	"context"
	"fmt"
	"time"

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
	c, err := b.send(method, params, nil)
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

// send registers a call for a new request and writes it.
func (b *MCPServer) send(method string, params any, t *turn) (*call, error) {
	return b.sendHook(method, params, t, nil)
}

// sendHook is send with blocked (optional) called before the write waits
// for room in the child's stdin, or for the child's exit after a failed
// write. blocked may be called more than once: pass an idempotent function
// (Turn passes its Release, wrapped to run once).
func (b *MCPServer) sendHook(method string, params any, t *turn, blocked func()) (*call, error) {
	m, err := jsonrpcframe.NewRequest(jsonrpcframe.ID{}, method, params)
	if err != nil {
		return nil, fmt.Errorf("codexchild: %s: %w", method, err)
	}
	return b.sendMessageHook(m, jsonrpcframe.ID{}, t, blocked)
}

// sendMessage gives m the backend's next id, registers the call and writes
// m.
func (b *MCPServer) sendMessage(m *jsonrpcframe.Message, origID jsonrpcframe.ID, t *turn) (*call, error) {
	return b.sendMessageHook(m, origID, t, nil)
}

// sendMessageHook is sendMessage with blocked (optional) called before the
// write waits for room in the child's stdin.
func (b *MCPServer) sendMessageHook(m *jsonrpcframe.Message, origID jsonrpcframe.ID, t *turn, blocked func()) (*call, error) {
	b.mu.Lock()
	if b.exitErr != nil {
		defer b.mu.Unlock()
		return nil, b.exitErr
	}
	if b.w == nil {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	if t != nil && t.threadID != "" {
		if b.threads[t.threadID] != nil {
			b.mu.Unlock()
			return nil, fmt.Errorf("codexchild: turn on thread %s: %w", t.threadID, ErrThreadBusy)
		}
	}
	b.nextID++
	m.ID = jsonrpcframe.IntID(b.nextID)
	c := &call{id: m.ID, origID: origID, method: m.Method, reply: make(chan reply, 1), turn: t}
	b.pending[c.id] = c
	if t != nil && t.threadID != "" {
		b.threads[t.threadID] = c
	}
	b.mu.Unlock()
	if err := b.writeHook(m, blocked); err != nil {
		if b.take(c) {
			return nil, err
		}
		// The exit handler (or the reader) got there first.
		if blocked != nil {
			blocked()
		}
		r := <-c.reply
		if r.err != nil {
			return nil, r.err
		}
		return nil, err
	}
	return c, nil
}

// write writes one message to the child. A failed write to a child that is
// dying reports the *ExitError.
func (b *MCPServer) write(m *jsonrpcframe.Message) error {
	return b.writeHook(m, nil)
}

// writeHook is write with blocked (optional) called before the write waits
// for room in the child's stdin. Writes are serialised here, so that the
// child calls the hook of the write it is doing.
func (b *MCPServer) writeHook(m *jsonrpcframe.Message, blocked func()) error {
	b.mu.Lock()
	w, ch := b.w, b.ch
	b.mu.Unlock()
	if w == nil {
		return ErrClosed
	}
	b.wmu.Lock()
	ch.blocked = blocked
	err := w.Write(m)
	ch.blocked = nil
	b.wmu.Unlock()
	if err == nil {
		return nil
	}
	if blocked != nil {
		blocked() // waits below for the child's exit
	}
	select {
	case <-ch.done:
		<-b.exitHandled
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.exitErr
	case <-time.After(time.Second):
	}
	return fmt.Errorf("codexchild: write to codex child: %w", err)
}
