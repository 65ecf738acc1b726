package gitctx

import (
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
)

// newWatcher returns a Watcher closed at the end of the test, which fails
// if the test leaves a goroutine behind.
func newWatcher(tb testing.TB) *Watcher {
	checkNoLeaks(tb)
	w := New(Config{})
	tb.Cleanup(func() { w.Close() })
	return w
}

func orNull(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// checkNoLeaks fails the test if it leaves goroutines running.
func checkNoLeaks(t testing.TB) { leakcheck.Check(t, "gitctx.") }
