package atmclient

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// newTestHome makes a temporary ATM home (also set as ATM_HOME) with team
// "dev" whose members are given, and returns a Client for it.
func newTestHome(t testing.TB, members ...string) (*Client, string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("ATM_HOME", home)
	writeTeam(t, home, "dev", members...)
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Home() != home {
		t.Fatalf("Client home = %q, want ATM_HOME %q", c.Home(), home)
	}
	return c, home
}

func writeTeam(t testing.TB, home, team string, members ...string) {
	t.Helper()
	var ms []map[string]any
	for _, m := range members {
		ms = append(ms, map[string]any{"agentId": m + "@" + team, "name": m, "agentType": "general-purpose", "model": "x", "joinedAt": 1770000000000, "cwd": "/w"})
	}
	cfg := map[string]any{"name": team, "createdAt": 1770000000000, "leadAgentId": "team-lead@" + team, "leadSessionId": "s", "members": ms}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".claude", "teams", team)
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fixedClock returns a clock that starts at start and ticks one
// millisecond per call.
func fixedClock(start time.Time) func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return start.Add(time.Duration(n) * time.Millisecond)
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func inboxPath(t testing.TB, c *Client, team, agent string) string {
	t.Helper()
	p, err := c.InboxPath(team, agent)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var bg = context.Background()

func jsonUnmarshal(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
}
