package acpbackend

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// TestACPToolsOverHTTP: an agent that refuses stdio MCP servers (mockacp
// with MOCKACP_MCP=http-only, as GitHub Copilot CLI) fails to open a
// session with ToolsStdio, and with ToolsHTTP reaches the thread's tool
// server through the backend's loopback endpoint, as the same identity;
// the endpoint refuses a request without the server's token, and Close
// stops the tool server process (no process left: newACPEnv).
func TestACPToolsOverHTTP(t *testing.T) {
	e := newACPEnv(t)
	p := e.params(t)
	prompt := "mcp atm atm_send {\"to\":\"arch\",\"message\":\"over http\"}"

	stdio := e.backend(t, e.config(t, "MOCKACP_MCP=http-only"))
	if _, err := stdio.Turn(context.Background(), backend.TurnRequest{Prompt: prompt, Params: p}); err == nil || !strings.Contains(err.Error(), "stdio MCP servers are not supported") {
		t.Errorf("stdio tools to an http-only agent: %v, want the agent's refusal", err)
	}

	cfg := e.config(t, "MOCKACP_MCP=http-only")
	cfg.ToolTransport = ToolsHTTP
	b := e.backend(t, cfg)
	res := acpTurnOK(t, b, backend.TurnRequest{Prompt: prompt, Params: p})
	if res.Text != `sent as m1: {"to":"arch","message":"over http"}` {
		t.Errorf("turn: %q, want the tool's answer", res.Text)
	}
	res = acpTurnOK(t, b, backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "mcp atm atm_send {\"to\":\"dev\",\"message\":\"again\"}", Params: p})
	if !strings.Contains(res.Text, "sent as m1") {
		t.Errorf("second turn: %q", res.Text)
	}
	log, _ := os.ReadFile(e.mcpLog)
	if got, want := string(log), "m1 {\"to\":\"arch\",\"message\":\"over http\"}\nm1 {\"to\":\"dev\",\"message\":\"again\"}\n"; got != want {
		t.Errorf("the tool server got %q, want %q", got, want)
	}

	srv, err := b.toolHTTP.server(p.ToolServers[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, auth string
		want               int
	}{
		{"no token", http.MethodPost, "", http.StatusUnauthorized},
		{"another token", http.MethodPost, "Bearer 00000000000000000000000000000000", http.StatusUnauthorized},
		{"GET with the token", http.MethodGet, srv.Headers[0].Value, http.StatusMethodNotAllowed},
		{"a notification", http.MethodPost, srv.Headers[0].Value, http.StatusAccepted},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Errorf("endpoint %s, want loopback", srv.URL)
	}
}
