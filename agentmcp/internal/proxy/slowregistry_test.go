package proxy

import (
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// slowRegistry is a registry whose Add waits until gate is closed, as a
// write stuck behind a slow disk would.
type slowRegistry struct {
	session.Registry
	adding chan string   // the identity of each Add that started
	gate   chan struct{} // closed: Adds go on
}

func (r slowRegistry) Add(s registry.Session) (registry.Session, error) {
	r.adding <- s.Identity
	<-r.gate
	return r.Registry.Add(s)
}

// TestReaderKeepsReadingWhileTheRegistryIsSlow: while a new session's
// registry write hangs, the connection keeps reading and answering, and so
// does every tool that needs the session table (codex-reply on the reading
// goroutine itself, agent_sessions, a second identity's codex); the
// identity being written is already reserved.
func TestReaderKeepsReadingWhileTheRegistryIsSlow(t *testing.T) {
	slow := slowRegistry{adding: make(chan string, 4), gate: make(chan struct{})}
	c := startProxy(t, harnessOpts{modify: func(o *Options) {
		o.wrapRegistry = func(r session.Registry) session.Registry { slow.Registry = r; return slow }
	}})
	c.initialize(false)
	_, first := c.send("tools/call", map[string]any{"name": "codex", "arguments": map[string]any{"prompt": "hello", "identity": "arch"}})
	if got := <-slow.adding; got != "arch" {
		t.Fatalf("registry Add for %q", got)
	}
	// The registry write of "arch" is stuck. Everything else is answered.
	if m := c.call("ping", nil); m.Error != nil {
		t.Errorf("ping: %s", m.Error)
	}
	if code, _ := c.rpcErr(c.tool("codex-reply", map[string]any{"prompt": "x", "agent_id": "codex-nope"})); code != proxyerr.CodeSessionNotFound {
		t.Errorf("codex-reply to an unknown agent: code %d", code)
	}
	if code, data := c.rpcErr(c.tool("codex", map[string]any{"prompt": "again", "identity": "arch"})); code != proxyerr.CodeIdentityConflict {
		t.Errorf("the identity being written is not reserved: code %d %v", code, data)
	}
	if res := c.structured(c.tool("agent_sessions", nil)); res == nil {
		t.Error("agent_sessions did not answer")
	}
	_, second := c.send("tools/call", map[string]any{"name": "codex", "arguments": map[string]any{"prompt": "hi", "identity": "dev-1"}})
	if got := <-slow.adding; got != "dev-1" {
		t.Fatalf("registry Add for %q", got)
	}
	close(slow.gate)
	for _, ch := range []chan *jsonrpcframe.Message{first, second} {
		res := c.structured(c.wait(ch))
		if id, _ := res["agent_id"].(string); !strings.HasPrefix(id, "codex-") {
			t.Errorf("codex after the slow write: %v", res)
		}
	}
}
