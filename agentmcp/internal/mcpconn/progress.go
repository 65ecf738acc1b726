package mcpconn

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Progress sends notifications/progress for the progress token of a
// request. A nil *Progress (no token) sends nothing.
//
// Send never waits for the client, as events do not (it is called on the
// Codex reader): a notification is written at once when the client's pipe
// has room and nothing else is being written, else queued for the pump,
// else dropped and counted (Stats.ProgressDropped). None is written after
// the request's response: every write of progress happens under the
// outbox's omu and first checks done, which the response sets before it
// takes omu for its own write. Without a pipe gauge (outside Linux, or a
// stdout that is not a pipe) every notification goes through the pump, so
// one sent just before the response may be dropped instead of written.
type Progress struct {
	c     *outbox
	token json.RawMessage
	n     atomic.Int64 // the last progress number given out
	last  atomic.Int64 // when Send was last called, in Unix nanoseconds
	done  atomic.Bool  // the request was answered: no more progress
}

// Send reports progress with a message; nothing once the request has been
// answered. It never waits for the client.
func (p *Progress) Send(message string) {
	if p == nil || p.done.Load() {
		return
	}
	n := p.n.Add(1)
	p.last.Store(time.Now().UnixNano())
	p.c.progress(p, func() *jsonrpcframe.Message {
		m, err := jsonrpcframe.NewNotification("notifications/progress", map[string]any{
			"progressToken": p.token, "progress": n, "message": message,
		})
		if err != nil {
			return nil
		}
		return m
	})
}

// LastSent is when progress was last sent (or dropped); the zero time
// when never, and for a nil *Progress.
func (p *Progress) LastSent() time.Time {
	if p == nil {
		return time.Time{}
	}
	if ns := p.last.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// finish stops progress; nothing is sent for the token afterwards. It is
// called before the response is written (which takes omu after it).
func (p *Progress) finish() {
	if p != nil {
		p.done.Store(true)
	}
}

// progress sends p's notification built by build without waiting for
// anything: written at once (after the held events, in the same write) when
// omu is free, no event is queued or being written and the client's pipe
// has room for it; else queued for the pump, which writes it under omu
// unless the request was answered meanwhile; dropped and counted when the
// queue is full or the client is gone.
func (c *outbox) progress(p *Progress, build func() *jsonrpcframe.Message) {
	if c.isGone() {
		c.progressDropped.Add(1)
		return
	}
	if c.omu.TryLock() {
		sent := c.progressNow(p, build)
		c.omu.Unlock()
		if sent {
			return
		}
	}
	c.emu.Lock()
	ok := len(c.queue) < c.queueMax
	if ok {
		c.queue = append(c.queue, outItem{build: build, progress: p})
		c.signalLocked()
	}
	c.emu.Unlock()
	if !ok {
		c.progressDropped.Add(1)
		c.warnDrops()
	}
}

// progressNow writes p's notification at once if that costs no waiting,
// and reports whether it is done with it (written, or not needed any
// more); c.omu is held.
func (c *outbox) progressNow(p *Progress, build func() *jsonrpcframe.Message) bool {
	if p.done.Load() {
		return true
	}
	c.emu.Lock()
	if c.gauge == nil || c.writing || len(c.queue) > 0 {
		c.emu.Unlock()
		return false
	}
	c.writing = true
	heldSize := c.heldSize
	c.emu.Unlock()
	m := build()
	fits := m != nil && c.gauge.has(heldSize+len(m.Params)+heldOverhead+inlineSlack)
	if fits {
		_ = c.writeOrdered(m) // a failure marks the client gone
	}
	c.release()
	return fits || m == nil
}
