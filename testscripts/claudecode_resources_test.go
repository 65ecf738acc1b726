//go:build unix

package testscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaudeCodeResources runs the real Claude Code 2.1.332 headless (-p)
// and offline against serve's session resources, in the two ways Claude
// Code 2.1.332 gives resources to the model (read from its code): the
// deferred tools ListMcpResourcesTool and ReadMcpResourceTool (loaded with
// ToolSearch; ReadMcpResourceTool calls resources/read, ListMcpResourcesTool
// shows the resources/list Claude Code fetched when it connected, which
// -p never refreshes: it registers no handler for
// notifications/resources/list_changed), and an @server:uri mention in
// the prompt, which it reads with resources/read before the first model
// request when the URI is in that list and ReadMcpResourceTool is allowed,
// and shows the model as "Full contents of resource:" text — only in an
// interactive session: -p hands the mention resolver an empty map of
// resources, so a mention there is dropped silently (the interactive test
// is TestClaudeCodeResourceMention). The first run starts a Codex agent and
// reads its messages with ReadMcpResourceTool; the second, with a new
// serve that finds the session in its registry (closed, with the summary
// the agent wrote when the first serve ended), lists the resources and
// reads the summary.
// On both MCP revisions (2026-07-28, which Claude Code speaks first, and
// 2025-11-25 pinned), with mockcodex as app-server.
func TestClaudeCodeResources(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{"auto", "2025-11-25"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			claudeResources(t, claude, claudeRun{protocol: protocol, backend: "app-server", codexBin: mockcodexBin,
				env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}})
		})
	}
}

func claudeResources(t *testing.T, claude string, run claudeRun) {
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead", "arch")
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
	serveLog := filepath.Join(dir, "serve.log")
	mcpFile := writeServeMCPConfig(t, dir, atmHome, run, serveLog, "--team", "dev", "--identity", "team-lead", "--config", config)
	claudeArgs := func(debug string) []string {
		return []string{"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose",
			"--allowedTools", "mcp__codex,ListMcpResourcesTool,ReadMcpResourceTool", "--debug-file", filepath.Join(dir, debug)}
	}
	failed := func(api *keyedMock, cp *claudeP, debug string) {
		api.dump()
		cp.dump(t)
		logTail(t, "serve's log", serveLog, 12000)
		logTail(t, "claude debug log", filepath.Join(dir, debug), 0, "MCP", "resource", "ention", "codex")
	}

	// The first run: a session, and its messages read with ReadMcpResourceTool.
	var agentID string
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__codex,ReadMcpResourceTool", "max_results": 10}}}
		case r.called("mcp__codex__codex") == 0:
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "hello resources", "identity": "arch"}}}
		case r.called("ReadMcpResourceTool") == 0:
			agentID = agentOf(r, "arch")
			return []mockBlock{{Tool: "ReadMcpResourceTool", Input: map[string]any{"server": "codex", "uri": "atm://dev/" + agentID + "/transcript"}}}
		}
		return []mockBlock{{Text: "all done"}}
	})
	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Use the codex tools as scripted.", claudeArgs("debug-1.log")...)
	if cp.err != nil {
		failed(api, cp, "debug-1.log")
		t.Fatalf("claude -p: %v", cp.err)
	}
	if res := streamResult(t, cp.stdout.Bytes()); res != "all done" {
		t.Errorf("Claude's result is %q, want %q", res, "all done")
	}
	last := api.lastMain()
	if last == nil || !strings.HasPrefix(agentID, "codex-") || agentID == "codex-none" {
		failed(api, cp, "debug-1.log")
		t.Fatalf("no session was started (agent_id %q)", agentID)
	}
	base := "atm://dev/" + agentID + "/"
	if res := last.results(); len(res) != 3 {
		t.Errorf("%d tool results, want 3 (ToolSearch, codex, ReadMcpResourceTool)", len(res))
	} else {
		read := res[2]
		for _, w := range []string{`"uri":"` + base + `transcript"`, `"mimeType":"text/markdown"`,
			"# Messages of arch (codex session " + agentID + ")", "## Message 1", "MOCK_REPLY: hello resources"} {
			if read.IsError || !strings.Contains(read.Text, w) {
				t.Errorf("ReadMcpResourceTool's result (is_error %v) lacks %q:\n%s", read.IsError, w, clipLog(read.Text, 3000))
			}
		}
	}
	if t.Failed() {
		failed(api, cp, "debug-1.log")
		return
	}

	// The second run: a new serve lists the session from its registry,
	// and the model reads its summary.
	summaryFiles, _ := filepath.Glob(filepath.Join(atmHome, ".config", "atm", "agent-sessions", "dev", "arch", "*", "summary.md"))
	api2 := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{"query": "select:ListMcpResourcesTool,ReadMcpResourceTool", "max_results": 10}}}
		case r.called("ListMcpResourcesTool") == 0:
			return []mockBlock{{Tool: "ListMcpResourcesTool", Input: map[string]any{"server": "codex"}}}
		case r.called("ReadMcpResourceTool") == 0:
			return []mockBlock{{Tool: "ReadMcpResourceTool", Input: map[string]any{"server": "codex", "uri": base + "summary"}}}
		}
		return []mockBlock{{Text: "seen"}}
	})
	cp2 := runClaudeP(t, claude, work, claudeEnv(claudeHome, api2.URL()), "What did arch do?", claudeArgs("debug-2.log")...)
	if cp2.err != nil {
		failed(api2, cp2, "debug-2.log")
		t.Fatalf("claude -p, second run: %v", cp2.err)
	}
	if res := streamResult(t, cp2.stdout.Bytes()); res != "seen" {
		t.Errorf("Claude's result is %q, want %q", res, "seen")
	}
	res := []mockResult{}
	if last := api2.lastMain(); last != nil {
		res = last.results()
	}
	if len(res) != 3 {
		failed(api2, cp2, "debug-2.log")
		t.Fatalf("%d tool results in the second run, want 3 (ToolSearch, ListMcpResourcesTool, ReadMcpResourceTool)", len(res))
	}
	list := res[1]
	for _, w := range []string{`"uri":"` + base + `summary"`, `"server":"codex"`, `"name":"` + agentID + `/summary"`, "codex session of arch"} {
		if list.IsError || !strings.Contains(list.Text, w) {
			t.Errorf("ListMcpResourcesTool's result (is_error %v) lacks %q:\n%s", list.IsError, w, clipLog(list.Text, 3000))
		}
	}
	if strings.Contains(list.Text, base+"result") {
		t.Errorf("the new serve lists a result it has not seen:\n%s", list.Text)
	}
	want := []string{`"uri":"` + base + `summary"`, "# arch: codex session " + agentID, "- Team: dev", " turn(s)", "## Summary"}
	if len(summaryFiles) == 1 { // the first serve ended in time to have the agent write it
		want = append(want, "- Status: closed", "Session ending. Write a concise summary")
	} else {
		t.Logf("the first serve saved no summary (%v): Claude Code gives a server 500 ms to end", summaryFiles)
	}
	read := res[2]
	for _, w := range want {
		if read.IsError || !strings.Contains(read.Text, w) {
			t.Errorf("ReadMcpResourceTool's result (is_error %v) lacks %q:\n%s", read.IsError, w, clipLog(read.Text, 3000))
		}
	}
	if t.Failed() {
		failed(api2, cp2, "debug-2.log")
	}
}
