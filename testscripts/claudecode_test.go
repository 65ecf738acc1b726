//go:build unix

package testscripts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
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

// claudeTimeout bounds one run of the Claude Code CLI.
const claudeTimeout = 120 * time.Second

var agentIDRe = regexp.MustCompile(`\b(?:codex|claude|opencode|gemini|mock)-[0-9a-hjkmnp-tv-z]{26}\b`)

// claudeRun is one headless Claude Code conversation with serve.
type claudeRun struct {
	protocol string // "auto" or "2025-11-25" (mcp_protocol)
	backend  string // mcp-server or app-server
	codexBin string // the Codex CLI serve runs
	env      map[string]string
}

// TestClaudeCode runs the real Claude Code CLI (2.1.331, installed by npm
// with the e2e packages, and once 2.1.332) headless and offline, against a loopback mock of
// the Anthropic API that plays the model, as a user's Claude Code would
// drive serve: it loads the tools with ToolSearch, starts an agent, has it
// ask an approval (which headless Claude Code cancels at once: the agent
// is told it was denied and the turn finishes), sends team mail as the
// agent's identity, and runs a turn in the background waited for with
// agent_wait. On both MCP revisions (Claude Code speaks 2026-07-28 when
// serve offers it; pinned to 2025-11-25 it falls back to initialize) and
// both Codex protocols (mockcodex), plus once with the real (pinned) Codex
// against the loopback Responses API. What Claude Code reports in its
// stream-json must hold no error result and no tool error.
func TestClaudeCode(t *testing.T) {
	claude := claudeCLI(t, "2.1.331")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []claudeRun{
		{protocol: "auto", backend: "mcp-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": testedMCPVersion}},
		{protocol: "auto", backend: "app-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}},
		{protocol: "2025-11-25", backend: "mcp-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": testedMCPVersion}},
		{protocol: "2025-11-25", backend: "app-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}},
	} {
		t.Run(run.protocol+"/"+run.backend, func(t *testing.T) {
			t.Parallel()
			claudeConversation(t, claude, run)
		})
	}
	// The same conversation on 2.1.332, the version the agent-team tests
	// (claudecode_teams_test.go) run.
	t.Run("2.1.332/auto/app-server", func(t *testing.T) {
		t.Parallel()
		claudeConversation(t, claudeCLI(t, "2.1.332"), claudeRun{protocol: "auto", backend: "app-server", codexBin: mockcodexBin,
			env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}})
	})
	t.Run("auto/real-codex-"+testedAppVersion, func(t *testing.T) {
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
		claudeConversation(t, claude, claudeRun{protocol: "auto", backend: "app-server", codexBin: codex, env: env})
	})
}

// claudeCLI returns the claude command of a pinned Claude Code version,
// installed (once, with npm ci) from its npm project: 2.1.331 with the
// other e2e clients in e2e/, 2.1.332 in e2e/claude-2.1.332/ (a project of
// its own, so each version has its own native binary). Without node or
// npm it skips loudly, or fails under ATM_REQUIRE_REAL_CODEX=1.
func claudeCLI(t *testing.T, version string) string {
	t.Helper()
	nodeTool(t, "node") // claude's launcher runs on node
	npm := nodeTool(t, "npm")
	dir, err := filepath.Abs("e2e")
	if err != nil {
		t.Fatal(err)
	}
	if version != "2.1.331" {
		dir = filepath.Join(dir, "claude-"+version)
	}
	installNodeModules(t, npm, dir)
	claude := filepath.Join(dir, "node_modules", ".bin", "claude")
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("claude %s not installed in %s: %v", version, dir, err)
	}
	return claude
}

// claudeConversation runs the scripted conversation and checks what
// Claude Code, serve and the team's files show.
func claudeConversation(t *testing.T, claude string, run claudeRun) {
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	teamDir := makeTeam(t, atmHome, "team-lead", "arch", "dev-1")
	work := filepath.Join(dir, "work")
	claudeHome := filepath.Join(dir, "claude-home")
	for _, d := range []string{work, claudeHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "serve.toml")
	if err := os.WriteFile(config, []byte("[plugins.atm-agent-mcp]\nmcp_protocol = \""+run.protocol+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		t.Fatal(err)
	}
	proxyLog := filepath.Join(dir, "proxy.log")
	childLog := filepath.Join(dir, "child.jsonl")
	serverEnv := map[string]string{"ATM_HOME": atmHome, "HOME": atmHome, "MOCKCODEX_LOG": childLog,
		"PATH": os.Getenv("PATH"), "GIT_CEILING_DIRECTORIES": dir}
	for k, v := range run.env {
		serverEnv[k] = v
	}
	mcpFile := writeMCPFile(t, dir, proxy,
		[]string{"serve", "--team", "dev", "--identity", "proxy", "--codex-bin", run.codexBin, "--backend", run.backend,
			"--approval-policy", "on-request", "--config", config, "--log-level", "debug", "--log-file", proxyLog},
		serverEnv)

	// The model's script. The agent_id comes from the codex result.
	var agentID string
	fromResult := func(prev []mockResult) string {
		for _, r := range prev {
			if id := agentIDRe.FindString(r.Text); id != "" {
				return id
			}
		}
		return "codex-none"
	}
	script := []mockStep{
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__codex,mcp__codex__codex-reply,mcp__codex__atm_send,mcp__codex__agent_wait", "max_results": 10}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "hello from claude code", "identity": "arch"}}}
		},
		func(prev []mockResult) []mockBlock {
			agentID = fromResult(prev)
			return []mockBlock{{Tool: "mcp__codex__codex-reply", Input: map[string]any{"agent_id": agentID,
				"prompt": "RUN_SHELL ESCALATE CMD=echo approved-by-claude"}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__atm_send", Input: map[string]any{"identity": "arch", "to": "dev-1", "message": "hi from arch via claude"}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__codex-reply", Input: map[string]any{"agent_id": agentID, "prompt": "work in the background", "background": true}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__agent_wait", Input: map[string]any{"agent_id": agentID, "timeout_secs": 60}}}
		},
		func([]mockResult) []mockBlock { return []mockBlock{{Text: "all done"}} },
	}
	api := startAnthropicMock(t, script)

	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Use the codex tools as scripted.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__codex")
	stdout := &cp.stdout
	dump := func() { cp.dump(t, proxyLog) }
	if cp.err != nil {
		dump()
		t.Fatalf("claude -p: %v", cp.err)
	}

	// What Claude Code reports.
	var initSeen, resultSeen bool
	var toolResults []string
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type       string `json:"type"`
			Subtype    string `json:"subtype"`
			IsError    bool   `json:"is_error"`
			Result     string `json:"result"`
			Tools      []string
			MCPServers []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"mcp_servers"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			dump()
			t.Fatalf("stream-json line is not JSON: %s", sc.Bytes())
		}
		switch {
		case ev.Type == "system" && ev.Subtype == "init":
			// init is printed once, before the first model request;
			// for a server given with --mcp-config (not a plugin's,
			// claudecode_connect_test.go) Claude Code 2.1.331 and
			// 2.1.332 wait for the connection to end before it (measured:
			// "connected" after 6 s and 14 s), so its status and tools
			// are settled here.
			initSeen = true
			connected := false
			for _, s := range ev.MCPServers {
				connected = connected || s.Name == "codex" && s.Status == "connected"
			}
			if !connected {
				t.Errorf("init: serve is not connected: %+v", ev.MCPServers)
			}
			if !containsStr(ev.Tools, "mcp__codex__codex") || !containsStr(ev.Tools, "mcp__codex__agent_respond") {
				t.Errorf("init: the codex tools are missing from %v", ev.Tools)
			}
		case ev.Type == "user":
			for _, r := range toolResults2(ev.Message.Content) {
				toolResults = append(toolResults, r.Text)
				if r.IsError {
					t.Errorf("Claude Code reports a tool error: %s", clipLog(r.Text, 2000))
				}
			}
		case ev.Type == "result":
			resultSeen = true
			if ev.IsError || ev.Subtype != "success" || ev.Result != "all done" {
				t.Errorf("result: subtype %q is_error %v result %q", ev.Subtype, ev.IsError, ev.Result)
			}
		}
	}
	if !initSeen || !resultSeen {
		t.Errorf("stream-json without init (%v) or result (%v)", initSeen, resultSeen)
	}
	if len(toolResults) != 6 {
		dump()
		t.Fatalf("%d tool results, want 6: %q", len(toolResults), toolResults)
	}
	for _, bad := range []string{"schema", "Invalid", "validation"} {
		if strings.Contains(stdout.String(), bad) && !strings.Contains(strings.Join(toolResults, ""), bad) {
			t.Errorf("Claude Code's output mentions %q", bad)
		}
	}
	want := []struct {
		step int
		re   string
	}{
		{1, `"agent_id":"codex-`},
		{1, `"identity":"arch"`},
		{2, `"status":"completed"`},
		{3, `"to":"dev-1"`},
		{4, `"status":"busy"`},
		{5, `"done":true`},
	}
	type match = struct {
		step int
		re   string
	}
	// The agent is told the approval was denied, and that nobody was asked
	// (headless Claude Code cancels every elicitation): mcp-server as the
	// rejection; app-server, whose decline has no reason (Codex says
	// "rejected by user"), by a steer the model answers. The turn finished.
	if run.backend == "mcp-server" {
		want = append(want, match{2, `dismissed without an answer: the MCP client cancelled it`})
	} else {
		want = append(want, match{2, `the approval for .* was denied: the approval request was dismissed without an answer: the MCP client cancelled it`})
	}
	if strings.Contains(run.codexBin, "mockcodex") {
		want = append(want, match{1, `MOCK`})
	}
	for _, w := range want {
		if !regexp.MustCompile(w.re).MatchString(toolResults[w.step]) {
			t.Errorf("tool result %d does not match %s:\n%s", w.step, w.re, clipLog(toolResults[w.step], 3000))
		}
	}

	// What serve and the files show: the revision spoken, the approval
	// denied (not aborted), the mail sent as the agent.
	proxyText, _ := os.ReadFile(proxyLog)
	switch run.protocol {
	case "auto":
		if !bytes.Contains(proxyText, []byte("server/discover")) || bytes.Contains(proxyText, []byte("mcp client initialized")) {
			t.Errorf("Claude Code did not speak 2026-07-28 with serve")
		}
	default:
		if !bytes.Contains(proxyText, []byte("mcp client initialized")) {
			t.Errorf("Claude Code did not fall back to initialize")
		}
	}
	audit, _ := os.ReadFile(filepath.Join(atmHome, ".config", "atm", "agent-sessions", "dev", "audit.jsonl"))
	if !bytes.Contains(audit, []byte("denied: the client cancelled the request")) {
		t.Errorf("the audit has no cancelled approval:\n%s", clipLog(string(audit), 4000))
	}
	inbox, _ := os.ReadFile(filepath.Join(teamDir, "inboxes", "dev-1.json"))
	var msgs []struct {
		From string `json:"from"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(inbox, &msgs); err != nil || len(msgs) != 1 || msgs[0].From != "arch" || msgs[0].Text != "hi from arch via claude" {
		t.Errorf("dev-1's inbox (%v): %s", err, inbox)
	}
	if t.Failed() {
		dump()
	}
}

// toolResults2 reads the tool_result blocks of a stream-json user message.
func toolResults2(content json.RawMessage) []mockResult { return toolResults(content) }

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// clipLog keeps the end of a long text for the test log.
func clipLog(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("…(%d bytes before)…\n%s", len(s)-n, s[len(s)-n:])
}
