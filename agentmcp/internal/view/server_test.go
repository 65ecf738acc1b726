package view

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
)

// TestServerRefuses: every request needs the token and the loopback Host;
// an answer also this page's Origin and a page token, and is taken once.
func TestServerRefuses(t *testing.T) {
	teamDir := t.TempDir()
	startStandIn(t, teamDir, "lead-a", feed.Agent{AgentID: "mock-1", Identity: "rev", State: feed.StateApproval,
		Approvals: []feed.Approval{{ID: "ap-1", Question: "Allow?"}}})
	tm := NewTeam(TeamConfig{Dirs: []string{teamDir}, Team: "dev", Rescan: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tm.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-tm.Ready()
	srv, err := NewServer(ServerConfig{Team: tm, TeamName: "dev", Token: "secret-token"})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Shutdown(context.Background())
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") || !strings.HasSuffix(srv.URL(), "/?token=secret-token") {
		t.Fatalf("URL %s", srv.URL())
	}
	base := "http://" + srv.Addr()
	do := func(method, path, host, origin, page, body string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if page != "" {
			req.Header.Set("X-Page-Token", page)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	code, page, h := do("GET", "/?token=secret-token", "", "", "", "")
	if code != 200 || !strings.Contains(page, `src="/app.js?token=secret-token"`) {
		t.Fatalf("the page: %d %s", code, page)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("headers %v", h)
	}
	pt := regexp.MustCompile(`data-page="([0-9a-f]+)"`).FindStringSubmatch(page)[1]
	origin := "http://" + srv.Addr()
	body := `{"serve":"lead-a","agent_id":"mock-1","approval_id":"ap-1","decision":"approve"}`
	tests := []struct {
		name                       string
		method, path, host, origin string
		page, body                 string
		want                       int
	}{
		{"no token", "GET", "/", "", "", "", "", http.StatusForbidden},
		{"wrong token", "GET", "/?token=secret-tokem", "", "", "", "", http.StatusForbidden},
		{"asset without token", "GET", "/app.js", "", "", "", "", http.StatusForbidden},
		{"events without token", "GET", "/events", "", "", "", "", http.StatusForbidden},
		{"rebound name", "GET", "/?token=secret-token", "evil.example:80", "", "", "", http.StatusMisdirectedRequest},
		{"localhost", "GET", "/?token=secret-token", "localhost:" + strings.Split(srv.Addr(), ":")[1], "", "", "", http.StatusMisdirectedRequest},
		{"answer by GET", "GET", "/api/answer?token=secret-token", "", origin, pt, "", http.StatusMethodNotAllowed},
		{"answer without origin", "POST", "/api/answer?token=secret-token", "", "", pt, body, http.StatusForbidden},
		{"answer from another origin", "POST", "/api/answer?token=secret-token", "", "http://evil.example", pt, body, http.StatusForbidden},
		{"answer without page token", "POST", "/api/answer?token=secret-token", "", origin, "", body, http.StatusForbidden},
		{"answer with a made-up page token", "POST", "/api/answer?token=secret-token", "", origin, "abc", body, http.StatusForbidden},
		{"answer of another kind", "POST", "/api/answer?token=secret-token", "", origin, pt, strings.Replace(body, "approve", "abort", 1), http.StatusBadRequest},
		{"answer", "POST", "/api/answer?token=secret-token", "", origin, pt, body, http.StatusOK},
		{"the same answer again", "POST", "/api/answer?token=secret-token", "", origin, pt, body, http.StatusConflict},
		{"the other answer", "POST", "/api/answer?token=secret-token", "", origin, pt, strings.Replace(body, "approve", "deny", 1), http.StatusConflict},
	}
	for _, tt := range tests {
		if code, b, _ := do(tt.method, tt.path, tt.host, tt.origin, tt.page, tt.body); code != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, code, b, tt.want)
		}
	}
}
