package mcpconn

import (
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
)

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkNoLeaks fails the test if it leaves goroutines running.
func checkNoLeaks(t *testing.T) { leakcheck.Check(t, "mcpconn.") }
