//go:build unix

package testscripts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// TestClaudeCodeLeadPush runs the real Claude Code 2.1.332 headless (-p),
// where it never reads the lead's inbox file: Claude starts two Codex
// agents in the team dev, gives codex2 a long background turn and codex1 a
// background turn in which the agent's model calls atm_send to team-lead,
// and waits in agent_wait for codex2. serve pushes codex1's mail through
// the messaging socket Claude Code offers its MCP servers, and the model's
// next request (the one that brings agent_wait's result) carries it, with
// the sender and the text, exactly once, while the inbox file keeps it.
// serve is registered as the README says for -p (--team only: under
// Claude Code its client is team-lead), and once with the identity given
// (--identity team-lead, Codex sessions defaulting to another name). With
// mockcodex on both protocols, and once with the real (pinned) Codex against
// the loopback Responses API.
func TestClaudeCodeLeadPush(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  claudeRun
		args []string
	}{
		{"mockcodex/app-server", claudeRun{backend: "app-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}},
			[]string{"--team", "dev"}},
		{"mockcodex/mcp-server/identity-team-lead", claudeRun{backend: "mcp-server", codexBin: mockcodexBin,
			env: map[string]string{"MOCKCODEX_VERSION": testedMCPVersion, "ATM_AGENT_MCP_DEFAULT_IDENTITY": "codex"}},
			[]string{"--team", "dev", "--identity", "team-lead"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			leadPush(t, claude, tc.run, tc.args...)
		})
	}
	t.Run("real-codex-"+testedAppVersion, func(t *testing.T) {
		t.Parallel()
		codex := realcodex.Bin(t, realcodex.AppServer)
		mock, err := mockmodel.Start(mockmodel.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mock.Close() })
		home := realcodex.NewHome(t, mock.URL(), nil)
		env := map[string]string{}
		for _, kv := range home.Env() { // Codex's home, the model's URL and key
			if k, v, ok := strings.Cut(kv, "="); ok && k != "HOME" && !strings.HasPrefix(k, "ATM_") {
				env[k] = v
			}
		}
		leadPush(t, claude, claudeRun{backend: "app-server", codexBin: codex, env: env}, "--team", "dev")
	})
}

// leadPush is one -p conversation of TestClaudeCodeLeadPush, with serve
// started with serveArgs.
func leadPush(t *testing.T, claude string, run claudeRun, serveArgs ...string) {
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	teamDir := makeTeam(t, atmHome, "team-lead", "codex1", "codex2")
	work := filepath.Join(dir, "work")
	claudeHome := filepath.Join(dir, "claude-home")
	for _, d := range []string{work, claudeHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	serveLog := filepath.Join(dir, "serve.log")
	mcpFile := writeServeMCPConfig(t, dir, atmHome, run, serveLog, serveArgs...)

	nonce := "PUSHED-" + randomHex(t, 6)
	sendPrompt := `CALL_TOOL=mcp__atm.atm_send ARGS={"to":"team-lead","message":"` + nonce + ` from the codex agent"}`
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		codex1, codex2 := agentOf(r, "codex1"), agentOf(r, "codex2")
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__codex,mcp__codex__codex-reply,mcp__codex__agent_wait,mcp__codex__agent_status", "max_results": 10}}}
		case r.called("mcp__codex__codex") == 0:
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "hello codex1", "identity": "codex1"}}}
		case r.called("mcp__codex__codex") == 1:
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "hello codex2", "identity": "codex2"}}}
		case r.called("mcp__codex__codex-reply") == 0:
			// A turn that lasts: Claude waits for it while codex1 mails.
			return []mockBlock{{Tool: "mcp__codex__codex-reply", Input: map[string]any{"agent_id": codex2, "prompt": "SLOW=6 keep working", "background": true}}}
		case r.called("mcp__codex__codex-reply") == 1:
			return []mockBlock{{Tool: "mcp__codex__codex-reply", Input: map[string]any{"agent_id": codex1, "prompt": sendPrompt, "background": true}}}
		case r.called("mcp__codex__agent_wait") == 0:
			return []mockBlock{{Tool: "mcp__codex__agent_wait", Input: map[string]any{"agent_id": codex2, "timeout_secs": 60}}}
		case r.pushed(nonce) > 0:
			return []mockBlock{{Text: "all done"}}
		case r.called("mcp__codex__agent_status") < 20: // a late push: look again
			time.Sleep(250 * time.Millisecond)
			return []mockBlock{{Tool: "mcp__codex__agent_status", Input: map[string]any{}}}
		}
		return []mockBlock{{Text: "no mail came"}}
	})

	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Use the codex tools as scripted.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__codex",
		"--debug-file", filepath.Join(dir, "claude-debug.log"))
	stdout, err := &cp.stdout, cp.err
	dump := func() {
		api.dump()
		cp.dump(t)
		logTail(t, "serve's log", serveLog, 12000)
		logTail(t, "claude's debug log (uds-messaging)", filepath.Join(dir, "claude-debug.log"), 0, "uds-messaging", "messaging")
	}
	if err != nil {
		dump()
		t.Fatalf("claude -p: %v", err)
	}
	if res := streamResult(t, stdout.Bytes()); res != "all done" {
		t.Errorf("Claude's result is %q, want %q (the model never saw the mail)", res, "all done")
	}

	// The request that brought agent_wait's result carries the mail, with
	// the sender and the text; no request shows it twice.
	var first *modelRequest
	for _, r := range api.requests() {
		if !r.Main {
			continue
		}
		if n := r.pushed(nonce); n > 1 {
			t.Errorf("model request %d shows the mail %d times, want once:\n%s", r.N, n, clipLog(r.lastText(), 3000))
		}
		if first == nil && r.pushed(nonce) == 1 {
			first = r
		}
	}
	switch {
	case first == nil:
		t.Errorf("no model request carries the mail %s", nonce)
	default:
		text := first.pushedText(nonce)
		for _, want := range []string{"Another Claude session sent a message", "codex1", nonce + " from the codex agent"} {
			if !strings.Contains(text, want) {
				t.Errorf("the pushed message lacks %q:\n%s", want, text)
			}
		}
		waited := false
		for _, res := range first.results() {
			waited = waited || strings.Contains(res.Text, `"done":true`)
		}
		if !waited || first.called("mcp__codex__agent_status") != 0 {
			t.Errorf("the mail did not come with agent_wait's result (after %d agent_status calls); that request's last message:\n%s",
				first.called("mcp__codex__agent_status"), clipLog(first.lastText(), 2000))
		}
	}
	if last := api.lastMain(); last != nil && last.pushed(nonce) != 1 {
		t.Errorf("the last model request shows the mail %d times, want 1", last.pushed(nonce))
	}
	// The inbox file stays the durable record.
	inbox, _ := os.ReadFile(filepath.Join(teamDir, "inboxes", "team-lead.json"))
	var msgs []struct {
		From string `json:"from"`
		Text string `json:"text"`
		Read bool   `json:"read"`
	}
	if err := json.Unmarshal(inbox, &msgs); err != nil || len(msgs) != 1 || msgs[0].From != "codex1" || !strings.Contains(msgs[0].Text, nonce) {
		t.Errorf("team-lead's inbox (%v): %s", err, inbox)
	}
	if t.Failed() {
		dump()
	}
}

// agentOf returns the agent_id of identity's session from the codex
// results in r's history ("codex-none" before there is one).
func agentOf(r *modelRequest, identity string) string {
	for _, res := range r.results() {
		if strings.Contains(res.Text, `"identity":"`+identity+`"`) {
			if id := agentIDRe.FindString(res.Text); id != "" {
				return id
			}
		}
	}
	return "codex-none"
}
