//go:build linux

package testscripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestClaudeCodeResourceMention runs the real Claude Code 2.1.332
// interactively (in a pty, offline) as a user would: the model starts a
// Codex agent, serve tells Claude Code that its resources changed (on
// 2025-11-25 notifications/resources/list_changed; on 2026-07-28 the same
// notification on the subscriptions/listen stream Claude Code opens), Claude
// Code lists them again, and the user's next prompt mentions the new
// session's summary as @codex:atm://dev/<agent_id>/summary: Claude Code
// reads it (resources/read) and shows it to the model with the prompt. On both MCP revisions, with mockcodex as app-server.
func TestClaudeCodeResourceMention(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{"auto", "2025-11-25"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			resourceMention(t, claude, claudeRun{protocol: protocol, backend: "app-server", codexBin: mockcodexBin,
				env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}})
		})
	}
}

func resourceMention(t *testing.T, claude string, run claudeRun) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home") // Claude Code's HOME, and serve's
	work := filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seedClaudeJSON(t, home, work)
	makeTeam(t, home, "team-lead", "arch")
	config := filepath.Join(dir, "serve.toml")
	if err := os.WriteFile(config, []byte("[plugins.atm-agent-mcp]\nmcp_protocol = \""+run.protocol+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	serveLog := filepath.Join(dir, "serve.log")
	debugLog := filepath.Join(dir, "claude-debug.log")
	mcpFile := writeServeMCPConfig(t, dir, home, run, serveLog, "--team", "dev", "--identity", "team-lead", "--config", config)

	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{"query": "select:mcp__codex__codex", "max_results": 10}}}
		case r.called("mcp__codex__codex") == 0:
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "hello mention", "identity": "arch"}}}
		case r.pushed("What did arch do?") > 0:
			return []mockBlock{{Text: "MENTION ANSWERED"}}
		}
		return []mockBlock{{Text: "STARTED"}}
	})
	cmd := exec.Command(claude, "--mcp-config", mcpFile, "--strict-mcp-config", "--permission-mode", "default",
		"--allowedTools", "mcp__codex,ToolSearch,ReadMcpResourceTool", "--debug-file", debugLog)
	cmd.Dir = work
	cmd.Env = claudeEnv(home, api.URL(), "TERM=xterm-256color", "COLUMNS=160", "LINES=50", "IS_SANDBOX=1")
	start := time.Now()
	p := startPTY(t, cmd, 160, 50)
	step := func(format string, args ...any) {
		t.Logf("%5.1fs: %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	dump := func() {
		api.dump()
		t.Logf("screen (last 6000 bytes):\n%s", clipLog(p.screen(), 6000))
		logTail(t, "serve's log", serveLog, 12000)
		logTail(t, "claude's debug log (MCP, resources)", debugLog, 12000, "MCP", "esource", "ention", "list_changed", "listen")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			dump()
			t.Fatal(err)
		}
	}

	must(p.waitScreen(regexp.MustCompile(`for shortcuts`), 0, 30*time.Second))
	step("ready")
	p.typeLine("Start arch as scripted.")
	// (Interactive on 2026-07-28 the codex call runs as an MCP task: its
	// agent_id is read from serve's log, not from the model's history.)
	var agentID string
	started := regexp.MustCompile(`msg="session started" .*agent_id=(codex-[0-9a-z]+) identity=arch`)
	must(p.waitFor("arch's session", 60*time.Second, func() bool {
		for _, l := range grepLines(serveLog, "session started") {
			if m := started.FindStringSubmatch(l); m != nil {
				agentID = m[1]
			}
		}
		return agentID != ""
	}))
	must(p.waitScreen(regexp.MustCompile(`STARTED`), 0, 60*time.Second))
	step("arch started: %s", agentID)
	// Claude Code lists serve's resources again once it is told.
	must(p.waitFor("Claude Code listing the resources again", 30*time.Second, func() bool {
		return len(grepLines(serveLog, "method=resources/list")) >= 2
	}))
	step("resources listed again")

	uri := "atm://dev/" + agentID + "/summary"
	p.typeLine("What did arch do? @codex:" + uri + " ")
	must(p.waitScreen(regexp.MustCompile(`MENTION ANSWERED`), 0, 60*time.Second))
	step("the mention answered")
	var asked *modelRequest
	for _, r := range api.requests() {
		if r.Main && r.pushed("What did arch do?") > 0 && asked == nil {
			asked = r
		}
	}
	switch {
	case asked == nil:
		t.Error("no model request carries the prompt with the mention")
	default:
		for _, w := range []string{"Full contents of resource:", "# arch: codex session " + agentID, "- Team: dev"} {
			if asked.pushed(w) == 0 {
				t.Errorf("the model was not shown %q with the prompt; its last message:\n%s", w, clipLog(asked.lastText(), 4000))
			}
		}
	}
	if len(grepLines(serveLog, "method=resources/read uri="+uri)) == 0 {
		t.Errorf("serve's log shows no resources/read of %s", uri)
	}
	// How Claude Code heard of the change: a subscriptions/listen stream
	// on 2026-07-28, the unsolicited notification otherwise.
	if listens := grepLines(serveLog, "subscriptions/listen opened"); (run.protocol == "auto") != (len(listens) > 0) {
		t.Errorf("serve's log shows %d subscriptions/listen streams on %s", len(listens), run.protocol)
	}
	if len(grepLines(debugLog, "Received resources/list_changed notification, refreshing resources")) == 0 {
		t.Error("Claude Code's debug log shows no resources/list_changed received")
	}
	if t.Failed() {
		dump()
	}
	p.stop(5 * time.Second)
}
