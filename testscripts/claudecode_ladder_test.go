//go:build unix

package testscripts

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// TestClaudeCodeStopsServe: the real Claude Code 2.1.332 ends a headless
// session while a Codex agent (the real, pinned Codex app-server, its
// model the loopback mock) is in the middle of a turn, and stops serve as
// it stops every stdio MCP server: SIGINT, SIGTERM 100 ms later, SIGKILL
// 400 ms after that (its debug log shows the ladder). serve takes the
// SIGTERM as the same shutdown, and the agent's record is left closed,
// never busy, with what serve knew: its thread, its turns, its last
// result (issue 37, item 2).
func TestClaudeCodeStopsServe(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	codex := realcodex.Bin(t, realcodex.AppServer)
	model, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	codexHome := realcodex.NewHome(t, model.URL(), nil)
	env := map[string]string{}
	for _, kv := range codexHome.Env() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "HOME" && !strings.HasPrefix(k, "ATM_") {
			env[k] = v
		}
	}
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead", "arch")
	claudeHome, work := filepath.Join(dir, "claude-home"), filepath.Join(dir, "work")
	for _, d := range []string{claudeHome, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	serveLog := filepath.Join(dir, "serve.log")
	mcpFile := writeServeMCPConfig(t, dir, atmHome, claudeRun{backend: "app-server", codexBin: codex, env: env}, serveLog,
		"--team", "dev", "--identity", "team-lead", "--approval-policy", "never")

	var agentID, thread string
	api := startAnthropicMock(t, []mockStep{
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{"query": "select:mcp__codex__codex,mcp__codex__codex-reply", "max_results": 5}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "remember the word albatross", "identity": "arch"}}}
		},
		func(prev []mockResult) []mockBlock {
			for _, r := range prev {
				agentID = agentIDRe.FindString(r.Text)
				if m := regexp.MustCompile(`"threadId":\s*"([^"]+)"`).FindStringSubmatch(r.Text); m != nil {
					thread = m[1]
				}
			}
			// A turn that is still running when the session ends.
			return []mockBlock{{Tool: "mcp__codex__codex-reply", Input: map[string]any{"agent_id": agentID, "prompt": "SLOW=60 plan the work", "background": true}}}
		},
		func([]mockResult) []mockBlock { return []mockBlock{{Text: "started"}} },
	})
	debugLog := filepath.Join(dir, "claude-debug.txt")
	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Start the architect.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose",
		"--allowedTools", "mcp__codex", "--debug-file", debugLog)
	dump := func() { cp.dump(t, serveLog, debugLog) }
	if cp.err != nil || agentID == "" || thread == "" {
		dump()
		t.Fatalf("claude -p: %v; agent %q, thread %q", cp.err, agentID, thread)
	}

	// serve is gone (at the latest by the SIGKILL); then the record.
	var rec map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		cmd := exec.Command("atm-agent-mcp", "sessions", "--team", "dev", "--json")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + atmHome, "ATM_HOME=" + atmHome}
		out, err := cmd.Output()
		var recs []map[string]any
		if err == nil && json.Unmarshal(out, &recs) == nil {
			for _, r := range recs {
				if r["agent_id"] == agentID {
					rec = r
				}
			}
		}
		if rec != nil && rec["serve_pid"] == nil { // no serve runs its instance
			break
		}
		if time.Now().After(deadline) {
			dump()
			t.Fatalf("serve did not end, or the record is missing: %s %v", out, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the record: %v", rec)
	// Cut mid-turn: interrupted (closed, never left busy).
	if rec["status"] != "interrupted" || rec["thread_state"] != "closed" {
		t.Errorf("the record's status is %v (thread %v), want interrupted and closed", rec["status"], rec["thread_state"])
	}
	if rec["backend_id"] != thread {
		t.Errorf("the record's thread is %v, want %s", rec["backend_id"], thread)
	}
	if n, _ := rec["turns"].(float64); n < 1 {
		t.Errorf("the record has %v turns, want the finished one at least", rec["turns"])
	}
	if lr, _ := rec["last_result"].(string); !strings.Contains(lr, "MOCK_REPLY: remember the word albatross") {
		t.Errorf("the record's last result is %q", lr)
	}

	// Claude Code's ladder, and serve taking the SIGTERM as the same
	// shutdown, after the records.
	debug, _ := os.ReadFile(debugLog)
	if !bytes.Contains(debug, []byte("Sending SIGINT to MCP server process")) {
		t.Errorf("Claude Code's debug log shows no SIGINT to serve")
	}
	logText, _ := os.ReadFile(serveLog)
	if !regexp.MustCompile(`(?s)shutdown requested.*sessions' records closed`).Match(logText) {
		t.Errorf("serve's log has no shutdown that closed the records first")
	}
	if bytes.Contains(debug, []byte("SIGINT failed, sending SIGTERM")) &&
		!regexp.MustCompile(`(?s)sessions' records closed.*signal during the shutdown: the same shutdown goes on`).Match(logText) {
		t.Errorf("Claude Code sent SIGTERM, and serve did not take it as the same shutdown after the records")
	}
	if t.Failed() {
		dump()
	}
}
