package acp

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// read is the one reader of the agent's stdout. It never waits for a
// consumer, nor for the agent's stdin: answers go to the waiting call's
// channel (closed, never sent on), updates are folded under mu and queued
// for OnEvent without blocking, permission requests go to the Asker on a
// goroutine of their own, and the answers it owes the agent at once (a
// rejection when there is no Asker, -32601 for a method it does not offer)
// are written by a goroutine of their own too (answerAsync, joined by
// Close): an agent blocked writing its stdout while its stdin is full
// would otherwise wait for a reader that waits for it.
func (c *Client) read() {
	defer c.proc.StdoutDone()
	r := jsonrpcframe.NewLineReader(c.proc.Stdout(), nil)
	g := childproc.NewGarbage(c.log, c.cfg.name(), nil)
	defer g.Flush()
	for {
		m, err := r.Read()
		if err != nil {
			var me *jsonrpcframe.MessageError
			if errors.As(err, &me) {
				c.garbage.Add(1)
				if g.Bad(me) {
					c.proc.Kill(g.Err())
					g.Drain(r) // counted, not dispatched
					return
				}
				continue
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.log.Warn("acp agent stdout", "err", err)
			}
			return
		}
		g.Good()
		c.dispatch(m)
	}
}

// dispatch handles one message of the agent.
func (c *Client) dispatch(m *jsonrpcframe.Message) {
	switch m.Kind() {
	case jsonrpcframe.KindResponse:
		c.response(m)
	case jsonrpcframe.KindNotification:
		if m.Method == methodSessionUpdate {
			c.update(m)
			return
		}
		c.log.Debug("acp: notification ignored", "method", m.Method)
	case jsonrpcframe.KindRequest:
		if m.Method == methodPermission {
			c.permissionRequest(m)
			return
		}
		// fs/* and terminal/* are not offered (clientCapabilities false);
		// nor is anything else.
		c.log.Info("acp: agent request not offered; answered -32601", "method", m.Method)
		resp := jsonrpcframe.NewErrorResponse(m.ID, &jsonrpcframe.Error{
			Code: jsonrpcframe.CodeMethodNotFound, Message: "method not found: " + m.Method})
		c.answerAsync(func() { _ = c.write(resp) })
	default:
		c.log.Warn("acp: message that is neither request, notification nor response; ignored", "id", m.ID.String())
	}
}

// response ends the call the answer is for.
func (c *Client) response(m *jsonrpcframe.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.pending[m.ID]
	if !ok {
		c.log.Info("acp: answer to no waiting call; dropped", "id", m.ID.String())
		return
	}
	delete(c.pending, m.ID)
	if e := m.Err(); e != nil {
		cl.err = fmt.Errorf("acp %s: %w", cl.method, e)
	} else if m.Error != nil {
		cl.err = fmt.Errorf("acp %s: malformed error %s", cl.method, m.Error)
	} else {
		cl.result = m.Result
		if cl.onResult != nil {
			cl.onResult(m.Result)
		}
	}
	if cl.onEnd != nil {
		cl.onEnd()
	}
	close(cl.done)
}

// update folds a session/update into its session's turn and queues it
// for OnEvent.
func (c *Client) update(m *jsonrpcframe.Message) {
	sid, ev, err := ParseUpdate(m.Params)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.badUpdate++
		c.log.Warn("acp: session/update not understood; dropped", "err", err)
		return
	}
	s := c.sessions[sid]
	if s == nil {
		c.late++
		c.log.Debug("acp: update of an unknown session", "session", sid, "update", ev.Update)
		c.emitLocked(ev)
		return
	}
	s.foldLocked(&ev)
	c.emitLocked(ev)
}
