package mcpconn

import (
	"encoding/json"
	"sync"
)

// Progress sends notifications/progress for the progress token of a
// request. A nil *Progress (no token) sends nothing.
type Progress struct {
	c     *outbox
	token json.RawMessage
	mu    sync.Mutex // guards n and done
	n     int
	done  bool
}

// Send reports progress with a message; nothing once the request has been
// answered.
func (p *Progress) Send(message string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.n++
	_ = p.c.notify("notifications/progress", map[string]any{
		"progressToken": p.token, "progress": p.n, "message": message,
	})
}

// finish stops progress; nothing is sent for the token afterwards.
func (p *Progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}
