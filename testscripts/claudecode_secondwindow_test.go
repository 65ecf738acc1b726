//go:build linux

package testscripts

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeWindows: a second interactive window of the real Claude
// Code 2.1.332, in a pty, with our plugin installed in its HOME as a user
// installs it, while a first window's serve holds the identity (issue 37).
// Its server never fails to connect (so Claude Code caches no failure of
// it, which would start the next sessions without our tools):
//
//   - default: nobody chose the identity, so the second window's serve
//     runs as team-lead-2, and the first tool result says so;
//   - explicit: ATM_AGENT_MCP_IDENTITY names the held identity, so serve
//     claims nothing and the tool call shows the clash and its fix in the
//     conversation, on the screen and to the model.
func TestClaudeCodeWindows(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	for _, tc := range []struct {
		name     string
		held     string   // the first window's identity
		first    []string // the first window's serve's own variables
		second   []string // the second window's
		screen   string   // a regexp of what the transcript (ctrl+o) shows of the tool call
		result   string   // in the tool result the model gets
		isError  bool
		noticeAt string // where the serve of the second window may claim its identity ("" for nowhere)
	}{
		{name: "default", held: "team-lead",
			first:  []string{"CLAUDE_CODE_SESSION_ID=0f3cda09-aaaa-4bbb-8ccc-000000000001"},
			screen: loose(`"instance_identity": "team-lead-2"`),
			result: `this window runs as \\"team-lead-2\\" in team \\"dev\\", because \\"team-lead\\" is held by another serve \(pid [0-9]+, another Claude Code window\?\)`, noticeAt: "team-lead-2"},
		{name: "explicit", held: "lead-2",
			first: []string{"ATM_AGENT_MCP_IDENTITY=lead-2"}, second: []string{"ATM_AGENT_MCP_IDENTITY=lead-2"},
			screen:  loose(`is held by another serve`),
			result:  `atm-agent-mcp is not running in this window: its identity "lead-2" in team "dev" is held by another serve \(pid [0-9]+ since .*Fix: the identity comes from ATM_AGENT_MCP_IDENTITY=lead-2 in this window's environment: start this window with another value \(ATM_AGENT_MCP_IDENTITY=NAME claude\)`,
			isError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			secondWindow(t, claude, tc.held, tc.first, tc.second, regexp.MustCompile(tc.screen), regexp.MustCompile(tc.result), tc.isError, tc.noticeAt)
		})
	}
}

// secondWindow is one case of TestClaudeCodeWindows.
func secondWindow(t *testing.T, claude, held string, first, second []string, screen, result *regexp.Regexp, isError bool, claimed string) {
	dir, home, work := pluginHome(t, claude)
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead", "arch")
	seedClaudeJSON(t, home, work)
	serveEnv := []string{"ATM_HOME=" + atmHome, "ATM_TEAM=dev", "ATM_AGENT_MCP_CODEX_BIN=mockcodex", "GIT_CEILING_DIRECTORIES=" + dir}

	// The first window's serve holds the identity.
	startFirstWindow(t, append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, serveEnv...), first...), work)
	lock := filepath.Join(atmHome, ".config", "atm", "agent-sessions", "dev", held+".lock")
	if !exists(lock) {
		t.Fatalf("the first window's serve holds no %s", lock)
	}

	tool := "mcp__plugin_atm-agent-mcp_codex__agent_status"
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{"query": "select:" + tool, "max_results": 5}}}
		case r.called(tool) == 0:
			return []mockBlock{{Tool: tool, Input: map[string]any{}}}
		}
		return []mockBlock{{Text: "WINDOW DONE"}}
	})
	serveLog := filepath.Join(dir, "serve.log")
	debugLog := filepath.Join(dir, "claude-debug.log")
	cmd := exec.Command(claude, "--permission-mode", "default", "--allowedTools", "mcp__plugin_atm-agent-mcp_codex,ToolSearch", "--debug-file", debugLog)
	cmd.Dir = work
	cmd.Env = claudeEnv(home, api.URL(), append(append(serveEnv, second...),
		"ATM_AGENT_MCP_LOG_FILE="+serveLog, "ATM_AGENT_MCP_LOG_LEVEL=debug", "TERM=xterm-256color", "COLUMNS=160", "LINES=50", "IS_SANDBOX=1")...)
	start := time.Now()
	p := startPTY(t, cmd, 160, 50)
	step := func(format string, args ...any) {
		t.Logf("%5.1fs: %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	dump := func() {
		api.dump()
		t.Logf("screen (last 6000 bytes):\n%s", clipLog(p.screen(), 6000))
		logTail(t, "serve's log", serveLog, 8000)
		logTail(t, "claude's debug log (MCP)", debugLog, 8000, "MCP", "mcp", "rror")
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
	p.typeLine("Look at the team.")
	must(p.waitFor("the tool result at the model", 60*time.Second, func() bool {
		r := api.lastMain()
		return r != nil && r.called(tool) == 1 && len(r.results()) == 2
	}))
	res := api.lastMain().results()[1]
	step("the tool result (error %v): %s", res.IsError, clipLog(res.Text, 600))
	if !result.MatchString(res.Text) || res.IsError != isError {
		t.Errorf("the tool result (error %v, want %v) does not match %s:\n%s", res.IsError, isError, result, clipLog(res.Text, 4000))
	}
	must(p.waitScreen(regexp.MustCompile(`WINDOW DONE`), 0, 30*time.Second))
	// The screen says "Called plugin:atm-agent-mcp:codex"; ctrl+o shows
	// the call's result in the transcript.
	from := len(p.raw())
	p.typeText("\x0f")
	if err := p.waitScreen(screen, from, 15*time.Second); err != nil {
		t.Errorf("the transcript (ctrl+o) does not show %s: %v", screen, err)
	} else {
		step("the transcript shows %s", screen)
	}
	p.typeText("\x0f")

	// Nothing failed: no failure cached, the server connected; the second
	// serve claimed what it says and nothing else.
	cache, _ := os.ReadFile(filepath.Join(home, ".claude", "mcp-needs-auth-cache.json"))
	if bytes.Contains(cache, []byte("plugin:atm-agent-mcp")) {
		t.Errorf("Claude Code cached a failure of our server: %s", cache)
	}
	locks, _ := filepath.Glob(filepath.Join(atmHome, ".config", "atm", "agent-sessions", "dev", "*.lock"))
	var names []string
	for _, l := range locks {
		names = append(names, strings.TrimSuffix(filepath.Base(l), ".lock"))
	}
	want := []string{held}
	if claimed != "" {
		want = append(want, claimed)
	}
	slices.Sort(names)
	slices.Sort(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("identity claims %v, want %v", names, want)
	}
	p.typeLine("/exit")
	if err := p.waitExit(30 * time.Second); err != nil {
		dump()
		p.stop(5 * time.Second)
		t.Fatalf("claude after /exit: %v", err)
	}
	if t.Failed() {
		dump()
	}
}

// loose is a regexp of the literal s that allows the spaces a repainting
// terminal leaves between its characters (stripANSI turns a cursor
// movement into a space).
func loose(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 {
			b.WriteString(` *`)
		}
		if r != ' ' {
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}
