package testscripts

import (
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

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
)

// TestClaudeCodeAgents: the real Claude Code CLI 2.1.332, headless and
// offline, leads an agent of another kind through serve, on both MCP
// revisions (2026-07-28 when serve offers it, and pinned to 2025-11-25):
// it finds agent_start and agent_reply with ToolSearch, starts a mockacp
// agent (configured in serve's configuration file), has it ask an
// approval (which headless Claude Code cancels: the agent is told it was
// rejected and its turn finishes), has it send team mail through its own
// tools, and reads agent_status. Every tool result Claude Code got is no
// error, the mail lands as the agent's identity, and nothing of the agent
// is left once Claude Code has stopped serve.
//
// claude-agent: the lead runs our plugin, installed in its HOME as a
// user's would be, and starts a Claude agent (the real claude-agent-acp,
// its model the loopback mock), whose Claude Code loads the same
// ~/.claude and so our plugin too: the serve it starts inside the agent
// stands by (it claims nothing; no team-lead-2), Claude Code caches no
// failure of our server in ~/.claude/mcp-needs-auth-cache.json, and the
// next claude -p in that HOME has our tools (issue 37).
func TestClaudeCodeAgents(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	for _, protocol := range []string{"auto", "2025-11-25"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			claudeLeadsAgent(t, claude, protocol)
		})
	}
	t.Run("claude-agent", func(t *testing.T) {
		t.Parallel()
		claudeAgentLoadsPlugin(t, claude)
	})
}

// claudeAgentLoadsPlugin is TestClaudeCodeAgents' claude-agent case.
func claudeAgentLoadsPlugin(t *testing.T, claude string) {
	acpBin := realacp.Install(t, "claude-agent-acp", "node_modules/.bin/claude-agent-acp")
	agentAPI := realacp.StartAnthropic(t)
	dir, home, work := pluginHome(t, claude) // the user's, the lead's and the agent's
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead", "rev-1")

	// serve's configuration: the Claude agent's model is its own mock; its
	// Claude Code reads the same HOME as the lead's.
	config := filepath.Join(dir, "serve.toml")
	toml := fmt.Sprintf("[plugins.atm-agent-mcp.agents.claude]\ncommand = %q\nenv = { ANTHROPIC_BASE_URL = %q, ANTHROPIC_API_KEY = \"sk-ant-mock\", "+
		"ANTHROPIC_MODEL = \"claude-sonnet-4-5\", DISABLE_ERROR_REPORTING = \"1\" }\n", acpBin, agentAPI.URL())
	if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	proxyLog := filepath.Join(dir, "proxy.log")
	tag := realacp.Tag(t)
	serveEnv := []string{"ATM_HOME=" + atmHome, "ATM_TEAM=dev", "ATM_CONFIG=" + config, "ATM_AGENT_MCP_CODEX_BIN=mockcodex",
		"ATM_AGENT_MCP_LOG_FILE=" + proxyLog, "ATM_AGENT_MCP_LOG_LEVEL=debug", "GIT_CEILING_DIRECTORIES=" + dir, realacp.TagEnv + "=" + tag}
	tool := func(name string) string { return "mcp__plugin_atm-agent-mcp_codex__" + name }

	var agentID string
	api := startAnthropicMock(t, []mockStep{
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:" + tool("agent_start") + "," + tool("agent_reply") + "," + tool("agent_status"), "max_results": 5}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: tool("agent_start"), Input: map[string]any{"agent": "claude", "identity": "rev-1", "prompt": "TURN ONE: say ready"}}}
		},
		func(prev []mockResult) []mockBlock {
			for _, r := range prev {
				if id := agentIDRe.FindString(r.Text); id != "" {
					agentID = id
				}
			}
			// The agent's Claude Code, which lives as long as the
			// agent, connects our plugin's server in the background:
			// the lead goes on once that connection has ended, so
			// that what its MCP log says does not hang on the
			// machine's load.
			start := time.Now()
			for time.Since(start) < settleLimit {
				if _, verdict := standbyLog(home); verdict != "" {
					t.Logf("the agent's Claude Code: %s, %.1fs after agent_start's result", verdict, time.Since(start).Seconds())
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			return []mockBlock{{Tool: tool("agent_reply"), Input: map[string]any{"agent_id": agentID, "prompt": "TURN TWO: again"}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: tool("agent_status"), Input: map[string]any{}}}
		},
		func([]mockResult) []mockBlock { return []mockBlock{{Text: "the agent ran"}} },
	})
	cp := runClaudeP(t, claude, work, claudeEnv(home, api.URL(), serveEnv...), "Start a Claude agent.",
		"--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__plugin_atm-agent-mcp_codex")
	dump := func(r *claudeP, logs ...string) {
		r.dump(t, append(append([]string{proxyLog}, logs...), mcpLogs(home)...)...)
	}
	results := streamToolResults(cp.stdout.Bytes())
	if cp.err != nil || len(results) != 4 {
		dump(cp)
		t.Fatalf("claude -p: %v; %d tool results, want 4", cp.err, len(results))
	}
	for i, want := range []string{``, `REPLY TO TURN ONE: say ready`, `REPLY TO TURN TWO: again`, `"instance_identity":"team-lead"`} {
		if r := results[i]; r.IsError || !strings.Contains(strings.ReplaceAll(r.Text, `": "`, `":"`), want) {
			t.Errorf("tool result %d (error %v) lacks %s:\n%s", i, r.IsError, want, clipLog(r.Text, 3000))
		}
	}

	// The agent's Claude Code started our plugin's server, which stood by,
	// and connected it.
	if file, verdict := standbyLog(home); file == "" {
		t.Errorf("no MCP log of the agent's Claude Code shows our server standing by: %v", mcpLogs(home))
	} else if verdict != "Successfully connected" {
		t.Errorf("the agent's Claude Code did not connect our server standing by (%q after %v): %s", verdict, settleLimit, file)
	}
	if _, err := os.Stat(filepath.Join(atmHome, ".config", "atm", "agent-sessions", "dev", "team-lead-2.lock")); err == nil {
		t.Errorf("a serve inside the agent claimed team-lead-2: it joined the team instead of standing by")
	}
	cache, _ := os.ReadFile(filepath.Join(home, ".claude", "mcp-needs-auth-cache.json"))
	if bytes.Contains(cache, []byte("plugin:atm-agent-mcp")) {
		t.Errorf("Claude Code cached a failure of our server: %s", cache)
	}

	// The next session in the same HOME has our tools: Claude Code starts
	// our server (a cached failure would have it "failed" in init at once,
	// and never started) and connects it; the model answers once it has.
	debugLog := filepath.Join(dir, "claude-debug-next.log")
	next := startAnthropicMock(t, []mockStep{
		func([]mockResult) []mockBlock {
			awaitVerdict(debugLog, pluginServer)
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{"query": "select:" + tool("agent_sessions"), "max_results": 5}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: tool("agent_sessions"), Input: map[string]any{"all": true}}}
		},
		func([]mockResult) []mockBlock { return []mockBlock{{Text: "listed"}} },
	})
	cp2 := runClaudeP(t, claude, work, claudeEnv(home, next.URL(), serveEnv...), "List the agents.",
		"--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__plugin_atm-agent-mcp_codex", "--debug-file", debugLog)
	results = streamToolResults(cp2.stdout.Bytes())
	if cp2.err != nil || len(results) != 2 || results[1].IsError || !strings.Contains(results[1].Text, agentID) {
		dump(cp2, debugLog)
		t.Fatalf("the next claude -p (%v): %+v", cp2.err, results)
	}
	if got := serverVerdicts(debugLog); len(got) == 0 || !strings.Contains(got[0], ourServer+"Successfully connected") {
		logTail(t, "claude's debug log (our server)", debugLog, 0, ourServer)
		t.Errorf("the next session's verdicts on our server are %q, want a connection first", got)
	}
	status := "absent"
	if m := regexp.MustCompile(`"name":"` + pluginServer + `","status":"([a-z]+)"`).FindSubmatch(cp2.stdout.Bytes()); m != nil {
		status = string(m[1])
	}
	if status != "connected" && status != "pending" {
		t.Errorf("the next session's init has our server %s, want connected or pending", status)
	}
	if left := realacp.Leftover(tag, 10*time.Second); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
	if t.Failed() {
		dump(cp)
	}
}

// standbyLog returns the MCP log (of the agent's Claude Code) in which
// our plugin's server says it stands by, and how that connection ended
// (mcpLogVerdict); "" and "" when there is none yet.
func standbyLog(home string) (file, verdict string) {
	for _, f := range mcpLogs(home) {
		if len(grepLines(f, "standing by: this serve runs inside an agent of another serve")) > 0 {
			return f, mcpLogVerdict(f)
		}
	}
	return "", ""
}

// streamToolResults are the tool results of Claude Code's stream-json
// output, in order.
func streamToolResults(out []byte) []mockResult {
	var results []mockResult
	for _, line := range bytes.Split(out, []byte("\n")) {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &ev) == nil && ev.Type == "user" {
			results = append(results, toolResults(ev.Message.Content)...)
		}
	}
	return results
}

func claudeLeadsAgent(t *testing.T, claude, protocol string) {
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	teamDir := makeTeam(t, atmHome, "team-lead", "rev-1", "dev-1")
	work := filepath.Join(dir, "work")
	claudeHome := filepath.Join(dir, "claude-home")
	for _, d := range []string{work, claudeHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "serve.toml")
	toml := "[plugins.atm-agent-mcp]\nmcp_protocol = \"" + protocol + "\"\n\n" +
		"[plugins.atm-agent-mcp.agents.mock]\ncommand = \"mockacp\"\nmode = \"default\"\n"
	if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		t.Fatal(err)
	}
	proxyLog := filepath.Join(dir, "proxy.log")
	tag := realacp.Tag(t) // nothing of the agent may be left
	mcpFile := writeMCPFile(t, dir, proxy,
		[]string{"serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex",
			"--config", config, "--log-level", "debug", "--log-file", proxyLog},
		map[string]string{"ATM_HOME": atmHome, "HOME": atmHome, "PATH": os.Getenv("PATH"),
			"GIT_CEILING_DIRECTORIES": dir, realacp.TagEnv: tag})

	var agentID string
	script := []mockStep{
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__agent_start,mcp__codex__agent_reply", "max_results": 10}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__agent_start", Input: map[string]any{"agent": "mock", "identity": "rev-1", "prompt": "say ready to review"}}}
		},
		func(prev []mockResult) []mockBlock {
			for _, r := range prev {
				if id := agentIDRe.FindString(r.Text); id != "" {
					agentID = id
				}
			}
			return []mockBlock{{Tool: "mcp__codex__agent_reply", Input: map[string]any{"agent_id": agentID, "prompt": "ask t1 execute make review"}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__agent_reply", Input: map[string]any{"agent_id": agentID,
				"prompt": `mcp atm atm_send {"to":"dev-1","message":"review done, by rev-1"}`}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__agent_status", Input: map[string]any{"agent_id": agentID}}}
		},
		func([]mockResult) []mockBlock { return []mockBlock{{Text: "all done"}} },
	}
	api := startAnthropicMock(t, script)

	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Lead the reviewer as scripted.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__codex")
	stdout := &cp.stdout
	dump := func() { cp.dump(t, proxyLog) }
	if cp.err != nil {
		dump()
		t.Fatalf("claude -p: %v", cp.err)
	}

	// The tool results, as Claude Code reports them in its stream.
	var results []mockResult
	for _, line := range bytes.Split(stdout.Bytes(), []byte("\n")) {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &ev) == nil && ev.Type == "user" {
			results = append(results, toolResults(ev.Message.Content)...)
		}
	}
	if len(results) != 5 {
		dump()
		t.Fatalf("%d tool results, want 5: %+v", len(results), results)
	}
	for i, want := range []string{
		``,                           // ToolSearch found them (its result is a tool reference)
		`"identity":"rev-1"`,         // agent_start
		`selected reject`,            // the approval Claude Code cancelled
		`sent to dev-1@dev as rev-1`, // the agent's own atm_send
		`"backend":"mock".*"identity":"rev-1"|"identity":"rev-1".*"backend":"mock"`, // agent_status
	} {
		r := results[i]
		if r.IsError || !regexp.MustCompile(want).MatchString(strings.ReplaceAll(r.Text, `": "`, `":"`)) {
			t.Errorf("tool result %d (error %v) does not match %s:\n%s", i, r.IsError, want, clipLog(r.Text, 3000))
		}
	}
	if !strings.Contains(stdout.String(), `"result":"all done"`) {
		t.Errorf("Claude Code did not end with the model's answer")
	}
	if agentID == "" {
		t.Fatal("no agent_id in agent_start's result")
	}

	// What serve and the files show.
	proxyText, _ := os.ReadFile(proxyLog)
	switch protocol {
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
	if !regexp.MustCompile(`"event":"approval","agent_id":"` + agentID + `".*Allow mock to run .make review.*"outcome":"denied`).Match(audit) {
		t.Errorf("the audit has no denied approval of the agent:\n%s", clipLog(string(audit), 4000))
	}
	inbox, _ := os.ReadFile(filepath.Join(teamDir, "inboxes", "dev-1.json"))
	var msgs []struct {
		From string `json:"from"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(inbox, &msgs); err != nil || len(msgs) != 1 || msgs[0].From != "rev-1" || msgs[0].Text != "review done, by rev-1" {
		t.Errorf("dev-1's inbox (%v): %s", err, inbox)
	}
	if t.Failed() {
		dump()
	}
}
