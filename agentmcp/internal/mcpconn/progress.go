package mcpconn

import (
	"encoding/json"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Progress sends notifications/progress for the progress token of a
// request. A nil *Progress (no token) sends nothing.
type Progress struct {
	c     *outbox
	token json.RawMessage
	n     int  // guarded by c.omu, as is done
	done  bool // the request was answered: no more progress
}

// Send reports progress with a message; nothing once the request has been
// answered.
func (p *Progress) Send(message string) {
	if p == nil {
		return
	}
	if p.c.isGone() {
		return
	}
	// The write is ordered under omu with the response's, so progress never
	// follows the response it belongs to.
	p.c.omu.Lock()
	defer p.c.omu.Unlock()
	if p.done {
		return
	}
	p.n++
	m, err := jsonrpcframe.NewNotification("notifications/progress", map[string]any{
		"progressToken": p.token, "progress": p.n, "message": message,
	})
	if err == nil {
		_ = p.c.writeOrdered(m)
	}
}

// finish stops progress; nothing is sent for the token afterwards.
func (p *Progress) finish() {
	if p == nil {
		return
	}
	p.c.omu.Lock()
	p.done = true
	p.c.omu.Unlock()
}
