package mcpconn

import (
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// noWait runs f and fails the test if it has not returned within 10 s:
// f must not wait for the client (a hang guard, not a timing assertion).
func noWait(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for the client", what)
	}
}

// holdOMU waits until a direct write holds c.omu (it is blocked on the
// client).
func holdOMU(t *testing.T, c *outbox) {
	t.Helper()
	poll.Until(t, "a write holding omu", func() bool {
		if c.omu.TryLock() {
			c.omu.Unlock()
			return false
		}
		return true
	})
}

// checkNoLeaks fails the test if it leaves goroutines running.
func checkNoLeaks(t *testing.T) { leakcheck.Check(t, "mcpconn.") }

// parseCall reads a tools/call request as Conn.request does: its params'
// members, what its _meta declares, then the call.
func parseCall(c *Conn, m *jsonrpcframe.Message) (*ToolCall, error) {
	params, _ := jsonrpcframe.AppendMembers(nil, m.Params)
	meta, err := c.requestMeta(params)
	if err != nil {
		return nil, err
	}
	return c.parseToolCall(m, params, meta)
}
