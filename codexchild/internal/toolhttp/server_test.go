package toolhttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/toolhttp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// The test binary is also a small stdio MCP server ("pongserver"): it
// answers every request with a result naming its PONG_AS.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "pongserver" {
		pong()
		return
	}
	os.Exit(m.Run())
}

func pong() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"pong from %s to %s"}]}}`+"\n", m.ID, os.Getenv("PONG_AS"), m.Method)
	}
}

// pongServer is the tool server: this test binary as pongserver.
func pongServer(t *testing.T, as string) backend.ToolServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "pongserver")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	return backend.ToolServer{Name: "atm", Command: link, Env: map[string]string{"PONG_AS": as}}
}

// post POSTs a tools/call to u with the Authorization header auth ("" for
// none) and returns the status and the body.
func post(t *testing.T, u, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestEndpoint: each tool server has its endpoint and token; a request
// with the token reaches that server's process, here, and comes back
// with its id; without it, or with another's, 401.
func TestEndpoint(t *testing.T) {
	s := toolhttp.New(toolhttp.Config{})
	t.Cleanup(func() { s.Close(context.Background()) })
	alice, err := s.Endpoint(t.Context(), pongServer(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.Endpoint(t.Context(), pongServer(t, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	if alice.URL != bob.URL || alice.Token == bob.Token || !strings.HasPrefix(alice.URL, "http://127.0.0.1:") {
		t.Fatalf("endpoints %+v and %+v: want one loopback URL, two tokens", alice, bob)
	}
	for _, tc := range []struct {
		name, auth string
		code       int
		body       string
	}{
		{"alice", alice.Header(), 200, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"pong from alice to tools/call"}]}}`},
		{"bob", bob.Header(), 200, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"pong from bob to tools/call"}]}}`},
		{"no token", "", 401, "unknown or missing bearer token"},
		{"a made-up token", "Bearer 0123", 401, "unknown or missing bearer token"},
	} {
		if code, body := post(t, alice.URL, tc.auth); code != tc.code || body != tc.body {
			t.Errorf("%s: HTTP %d %q, want %d %q", tc.name, code, body, tc.code, tc.body)
		}
	}
	s.Close(context.Background())
	if _, err := s.Endpoint(t.Context(), pongServer(t, "carol")); err != backend.ErrClosed {
		t.Errorf("Endpoint after Close: %v, want ErrClosed", err)
	}
}

// TestEndpointOnHost: with a Host, the endpoint's URL is on the host's
// loopback, at the port of a reverse forward to this machine's listener:
// a client on the host reaches the tool server here with the token. While
// the host is down no endpoint is given.
func TestEndpointOnHost(t *testing.T) {
	srv := sshtest.Start(t, nil)
	h, err := sshhost.New(sshhost.Config{Name: "box", Dest: srv.Alias, SSHArgs: srv.SSHArgs(), MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	})
	s := toolhttp.New(toolhttp.Config{Host: h})
	t.Cleanup(func() { s.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := h.Up(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := s.Endpoint(ctx, pongServer(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(e.URL)
	if u.Hostname() != "127.0.0.1" || u.Path != "/mcp" {
		t.Fatalf("endpoint on the host %s", e.URL)
	}
	// A client there: curl, if the host has it; else the forward is
	// reached from here at the same port (the test host's loopback is
	// this machine's).
	if _, err := exec.LookPath("curl"); err == nil {
		out, err := h.Run(ctx, "", []string{"curl", "-sS", "-H", "Authorization: " + e.Header(), "--data", `{"jsonrpc":"2.0","id":3,"method":"tools/call"}`, e.URL})
		if want := `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"pong from alice to tools/call"}]}}`; err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("curl on the host: %q, %v; want %s", out, err, want)
		}
	}
	if code, body := post(t, e.URL, e.Header()); code != 200 || !strings.Contains(body, "pong from alice") {
		t.Errorf("through the forward: HTTP %d %q", code, body)
	}
	if code, _ := post(t, e.URL, ""); code != 401 {
		t.Errorf("through the forward without the token: HTTP %d, want 401", code)
	}
	srv.Stop()
	for h.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	s2 := toolhttp.New(toolhttp.Config{Host: h})
	t.Cleanup(func() { s2.Close(context.Background()) })
	if _, err := s2.Endpoint(ctx, pongServer(t, "bob")); err == nil || !strings.Contains(err.Error(), `host "box"`) || !strings.Contains(err.Error(), "the team-mail tools for host box") {
		t.Errorf("Endpoint while the host is down: %v, want the host's error", err)
	}
}
