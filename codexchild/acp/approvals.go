package acp

import (
	"context"
	"fmt"
	"sync"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// permission is one session/request_permission waiting for its answer.
// Exactly one answer reaches the agent: the Asker's, or Cancelled when the
// turn is interrupted or ends first.
type permission struct {
	c      *Client
	req    PermissionRequest
	wireID jsonrpcframe.ID
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// permissionRequest takes a request of the agent on the reader: it is
// registered (the session is awaiting approval), announced as an event, and
// handed to the Asker on a goroutine of its own.
func (c *Client) permissionRequest(m *jsonrpcframe.Message) {
	req, err := parsePermission(m.Params)
	if err != nil {
		c.log.Warn("acp: permission request not understood; answered -32602", "err", err)
		resp := jsonrpcframe.NewErrorResponse(m.ID, &jsonrpcframe.Error{Code: jsonrpcframe.CodeInvalidParams, Message: err.Error()})
		c.answerAsync(func() { _ = c.write(resp) })
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &permission{c: c, wireID: m.ID, ctx: ctx, cancel: cancel}
	c.mu.Lock()
	c.nextPerm++
	req.ID = fmt.Sprintf("permission-%d", c.nextPerm)
	cancelled := false
	if s := c.sessions[req.SessionID]; s != nil && s.turn != nil {
		req.Turn = s.turn.n
		cancelled = s.turn.cancelled
	}
	p.req = req
	c.perms[req.ID] = p
	c.emitLocked(Event{SessionID: req.SessionID, Turn: req.Turn, Kind: EventPermission, Permission: &p.req, Raw: req.Raw})
	c.mu.Unlock()
	// Answered on a goroutine of its own, never on the reader (see read);
	// Close joins it (the agent's death cancels ctx).
	switch {
	case cancelled:
		c.answerAsync(func() { p.respond(Cancelled) }) // after session/cancel every request is cancelled
	case c.cfg.Asker == nil:
		c.answerAsync(func() { p.respond(RejectOnce) })
	default:
		c.answerAsync(func() { p.respond(c.cfg.Asker.Ask(ctx, p.req)) })
	}
}

// respond sends the answer, once; later calls do nothing.
func (p *permission) respond(d Decision) {
	p.once.Do(func() {
		c := p.c
		p.cancel()
		id, kind := "", ""
		if d != Cancelled {
			id, kind = selectOption(p.req.Options, d)
			if id == "" {
				c.log.Warn("acp: no permission option fits the decision; answered cancelled", "decision", d, "options", p.req.Options)
			} else if kind != string(d) {
				c.log.Info("acp: permission option of another kind chosen", "decision", d, "kind", kind)
			}
		}
		if id == "" {
			d = Cancelled
		}
		c.mu.Lock()
		delete(c.perms, p.req.ID)
		c.emitLocked(Event{SessionID: p.req.SessionID, Turn: p.req.Turn, Kind: EventPermissionDone, Permission: &p.req, Decision: d})
		dead := c.exitErr != nil
		c.mu.Unlock()
		if !dead {
			c.answer(p.wireID, permissionOutcome(id))
		}
	})
}

// stop ends a request whose agent died: nothing is sent.
func (p *permission) stop() {
	p.once.Do(func() {
		p.cancel()
		c := p.c
		c.mu.Lock()
		delete(c.perms, p.req.ID)
		c.mu.Unlock()
	})
}

// permsOfLocked returns the pending requests of a session's turn; mu is
// held.
func (c *Client) permsOfLocked(sid string, turn int64) []*permission {
	var out []*permission
	for _, p := range c.perms {
		if p.req.SessionID == sid && (p.req.Turn == turn || p.req.Turn == 0) {
			out = append(out, p)
		}
	}
	return out
}
