package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// fakeClient is the MCP connection as the tools see it.
type fakeClient struct{}

func (fakeClient) Elicitation() bool    { return false }
func (fakeClient) Stats() mcpconn.Stats { return mcpconn.Stats{} }

// harness is an Env over real registry and inbox files in a temporary ATM
// home, with team "dev" (members team-lead, arch, dev-1) and the fake backend
// (package fakebackend) under the default kind.
type harness struct {
	t    testing.TB
	env  *Env
	home string
	atm  *atmclient.Client
	fb   *fakebackend.Backend
	next int64
}

func newHarness(t testing.TB, opts ...func(*session.Config)) *harness {
	t.Helper()
	checkNoLeaks(t)
	home := t.TempDir()
	dir := filepath.Join(home, ".claude", "teams", "dev")
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o755); err != nil {
		t.Fatal(err)
	}
	var members []map[string]any
	for _, m := range []string{"team-lead", "arch", "dev-1"} {
		members = append(members, map[string]any{"agentId": m + "@dev", "name": m, "agentType": "general-purpose", "joinedAt": 1})
	}
	b, _ := json.Marshal(map[string]any{"name": "dev", "createdAt": 1, "leadAgentId": "team-lead@dev", "members": members})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(registry.Config{Home: home, Team: "dev", Identity: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	atm, err := atmclient.New(atmclient.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	fb := fakebackend.New(fakebackend.Config{})
	cfg := session.Config{Home: home, Team: "dev", Backends: map[string]session.Backend{registry.DefaultKind: fb}, Registry: session.RegistryOf(reg), Cwd: home}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := session.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Shutdown()
		m.Stop()
		m.Wait(5 * time.Second)
		reg.Close()
	})
	env := New(Config{Sessions: m, ATM: atm, Client: fakeClient{}, Team: "dev", Identity: "proxy", Child: fb,
		MaxSessions: 10, Cwd: home, CodexHome: filepath.Join(home, ".codex"), Started: time.Now()})
	return &harness{t: t, env: env, home: home, atm: atm, fb: fb}
}

// call runs a tool with args (a JSON object, or "" for none) the way the
// connection does, and returns its result or error.
func (h *harness) call(name, args string) (*mcpconn.ToolResult, error) {
	h.t.Helper()
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	a, err := mcpconn.ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	h.next++
	id := jsonrpcframe.IntID(h.next)
	return h.env.CallTool(context.Background(), &mcpconn.ToolCall{ID: id, RawID: id.Raw(), Name: name, Args: a})
}

// modern is how a modern client's call is made: its capabilities and,
// on a retry, its requestState and inputResponses.
type modern struct {
	elicitation bool
	state       string
	responses   string
}

// callModern runs a tool as a modern (2026-07-28) client calls it.
func (h *harness) callModern(name, args string, m modern) (*mcpconn.ToolResult, error) {
	h.t.Helper()
	a, err := mcpconn.ParseArgs(json.RawMessage(args))
	if err != nil {
		return nil, err
	}
	h.next++
	id := jsonrpcframe.IntID(h.next)
	c := &mcpconn.ToolCall{ID: id, RawID: id.Raw(), Name: name, Args: a, Modern: true, Elicitation: m.elicitation, RequestState: m.state}
	if m.responses != "" {
		c.InputResponses = json.RawMessage(m.responses)
	}
	return h.env.CallTool(context.Background(), c)
}

// ok runs a tool that must succeed and returns its structuredContent (or
// its text, decoded when it is JSON) as generic JSON.
func (h *harness) ok(name, args string) map[string]any {
	h.t.Helper()
	r, err := h.call(name, args)
	if err != nil {
		h.t.Fatalf("%s %s: %v", name, args, err)
	}
	if r.IsError {
		h.t.Fatalf("%s %s: isError result %q", name, args, r.Text)
	}
	var out map[string]any
	if r.Structured != nil {
		b, _ := json.Marshal(r.Structured)
		_ = json.Unmarshal(b, &out)
	} else {
		_ = json.Unmarshal([]byte(r.Text), &out)
	}
	return out
}

// wireError renders err as the client reads it: "code message".
func wireError(err error) string {
	var e *proxyerr.Error
	if !errors.As(err, &e) {
		return "not a proxy error: " + err.Error()
	}
	return fmt.Sprint(e.Kind.Code(), " ", e.Msg)
}

// checkNoLeaks fails the test if it leaves goroutines running.
func checkNoLeaks(t testing.TB) { leakcheck.Check(t, "tools.") }
