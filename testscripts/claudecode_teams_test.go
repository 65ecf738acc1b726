//go:build linux

package testscripts

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClaudeCodeTeams runs the real Claude Code 2.1.332 interactive, in a
// pseudo-terminal, with agent teams on, as a user would: serve is
// registered with --mcp-config and no team, so it joins the session's team
// session-<id8>. The lead (the mock model) starts the Codex agent codex1,
// which then appears in the team's config.json; the lead's SendMessage to
// codex1 starts a Codex turn, in which the agent answers with atm_send to
// team-lead; that reply reaches the lead once; the lead's shutdown_request
// closes codex1 (its session closed in the registry, a shutdown_response
// in the lead's inbox); and the lead's /exit, which deletes the team
// directory, leaves no Codex process and no flood of warnings in serve's
// log. The screen shows codex1 as a teammate: its mail as "Message from
// @codex1: …" and its mail turn's end as "Message from @codex1: Finished
// its turn: …" (both pushed through the messaging socket in its
// cross-session envelope), never Claude Code's frame for another session's
// message ("Another Claude session sent a message", "permission
// laundering") nor a raw frame. With mockcodex on both protocols; and once
// with a lead that has spawned a native teammate, and so also reads its
// inbox file every second: codex1's reply still reaches it once (pushed,
// then skipped in the file), and codex1's idle_notification is shown to it
// once and on the screen as a native teammate's is ("Teammate @codex1
// finished").
func TestClaudeCodeTeams(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	appServer := claudeRun{backend: "app-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}}
	mcpServer := claudeRun{backend: "mcp-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": testedMCPVersion}}
	for _, tc := range []struct {
		name     string
		run      claudeRun
		teammate bool
	}{
		{"app-server", appServer, false},
		{"mcp-server", mcpServer, false},
		{"app-server/with-a-native-teammate", appServer, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			teamSession(t, claude, tc.run, tc.teammate)
		})
	}
}

// teamSession is one interactive session of TestClaudeCodeTeams. With
// teammate, the lead first spawns a native in-process teammate, helper:
// from then on Claude Code's lead also reads its inbox file every second,
// so codex1's reply could reach it twice, pushed and read from the file.
func teamSession(t *testing.T, claude string, run claudeRun, teammate bool) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home") // Claude Code's HOME, and serve's and Codex's
	work := filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seedClaudeJSON(t, home, work)
	sessionID := newUUID(t)
	team := "session-" + sessionID[:8]
	teamDir := filepath.Join(home, ".claude", "teams", team)
	serveLog := filepath.Join(dir, "serve.log")
	childLog := filepath.Join(dir, "child.jsonl")
	debugLog := filepath.Join(dir, "claude-debug.log")
	mcpFile := writeServeMCPConfig(t, dir, home, run, serveLog)

	nonce := randomHex(t, 6)
	ask := "LEAD-ASKS-" + nonce
	reply := "REPLY-" + nonce + " from codex1"
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		if r.firstUserText() != "" && strings.Contains(r.firstUserText(), "HELPERTASK") {
			return []mockBlock{{Text: "helper done"}} // the native teammate's turn
		}
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__codex,mcp__codex__agent_sessions,SendMessage", "max_results": 10}}}
		case teammate && r.called("Agent") == 0:
			return []mockBlock{{Tool: "Agent", Input: map[string]any{"description": "a helper", "name": "helper",
				"prompt": "HELPERTASK: say that you are done."}}}
		case r.called("mcp__codex__codex") == 0:
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "You are codex1, a member of the lead's team.", "identity": "codex1"}}}
		case r.called("SendMessage") == 0:
			// The agent's model answers with atm_send to the lead.
			return []mockBlock{{Tool: "SendMessage", Input: map[string]any{"to": "codex1", "summary": "a question for codex1",
				"message": ask + ": please answer.\nCALL_TOOL=mcp__atm.atm_send ARGS={\"to\":\"team-lead\",\"message\":\"" + reply + "\"}"}}}
		case r.pushed(reply) == 0:
			return []mockBlock{{Text: "Waiting for codex1."}}
		case r.called("SendMessage") == 1:
			return []mockBlock{{Tool: "SendMessage", Input: map[string]any{"to": "codex1",
				"message": map[string]any{"type": "shutdown_request", "reason": "work done"}}}}
		}
		return []mockBlock{{Text: "LEAD DONE"}}
	})

	cmd := exec.Command(claude, "--mcp-config", mcpFile, "--strict-mcp-config", "--permission-mode", "default",
		"--allowedTools", "mcp__codex,SendMessage,ToolSearch,Agent", "--debug-file", debugLog, "--session-id", sessionID)
	cmd.Dir = work
	cmd.Env = claudeEnv(home, api.URL(), "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1", "TERM=xterm-256color", "COLUMNS=160", "LINES=50", "IS_SANDBOX=1")
	start := time.Now()
	p := startPTY(t, cmd, 160, 50)
	step := func(format string, args ...any) {
		t.Logf("%5.1fs: %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	dump := func() {
		api.dump()
		t.Logf("screen (last 6000 bytes):\n%s", clipLog(p.screen(), 6000))
		logTail(t, "serve's log", serveLog, 15000)
		logTail(t, "claude's debug log (teams, mailbox, messaging, MCP, turns, errors)", debugLog, 15000,
			"uds-messaging", "Mailbox", "InboxPoller", "team", "SendMessage", "MCP server", "[engine]", "ERROR", "rror")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			dump()
			t.Fatal(err)
		}
	}

	// The session's team exists and the TUI waits for input.
	must(p.waitFor("the team "+team, 30*time.Second, func() bool { return exists(filepath.Join(teamDir, "config.json")) }))
	must(p.waitScreen(regexp.MustCompile(`for shortcuts`), 0, 30*time.Second))
	step("ready: %s", team)
	p.typeLine("LEADPROMPT: work with codex1")
	step("prompt typed")

	// serve joined the session's team: codex1 is a member once live.
	must(p.waitFor("codex1 in "+team+"/config.json", 60*time.Second, func() bool { return teamHasMember(teamDir, "codex1") }))
	step("codex1 is a member")
	// The lead's SendMessage starts a Codex turn (the mail envelope).
	must(p.waitFor("a Codex turn with the lead's message", 60*time.Second, func() bool { return fileHas(childLog, ask) }))
	step("the Codex turn started")
	// Its reply reaches the lead.
	must(p.waitFor("the reply at the lead", 60*time.Second, func() bool {
		r := api.lastMain()
		return r != nil && r.pushed(reply) > 0
	}))
	step("the reply reached the lead: %q", around(api.lastMain().pushedText(reply), reply, 300))
	// The shutdown_request closes codex1.
	must(p.waitFor("codex1 closed", 60*time.Second, func() bool { return sessionStatus(t, home, "codex1") == "closed" }))
	step("codex1 closed")
	// codex1 answers shutdown_response in the lead's inbox. A lead that
	// reads its inbox drops it at once ("unrouted protocol frame": codex1
	// is no teammate of its own), so its debug log may be where it shows.
	must(p.waitFor("the shutdown_response", 30*time.Second, func() bool {
		return shutdownApproved(teamDir) || teammate && len(grepLines(debugLog, `frame from "codex1": "{\"type\":\"shutdown_response\"`)) > 0
	}))
	step("codex1 answered shutdown_response")
	must(p.waitFor("codex1 gone from "+team+"/config.json", 30*time.Second, func() bool { return !teamHasMember(teamDir, "codex1") }))
	step("codex1 left the team")
	must(p.waitFor("the lead's last turn", 30*time.Second, func() bool {
		r := api.lastMain()
		return r != nil && r.called("SendMessage") == 2 && len(r.results()) > 0
	}))
	must(p.waitScreen(regexp.MustCompile(`LEAD DONE`), 0, 30*time.Second)) // its turn has ended
	// The mail turn's end was told as a native teammate tells it. A lead
	// with a teammate of its own reads its inbox: there the end is an
	// idle_notification, shown to the model once and on the screen as
	// Claude Code shows its own teammates' ("Teammate @codex1 finished").
	// Another lead never reads that inbox: the end is pushed through the
	// socket instead, in codex1's envelope ("Message from @codex1: Finished
	// its turn: …"), and no frame waits in the inbox.
	codex1Idle := `{"type":"idle_notification","from":"codex1"`
	if teammate {
		must(p.waitFor("codex1's idle_notification at the lead", 30*time.Second, func() bool {
			r := api.lastMain()
			return r != nil && r.pushed(codex1Idle) > 0
		}))
		step("the lead was shown codex1's idle_notification")
		for _, r := range api.requests() {
			if n := r.pushed(codex1Idle); n > 1 {
				t.Errorf("model request %d shows codex1's idle_notification %d times", r.N, n)
			}
		}
		if n := api.lastMain().pushed(codex1Idle); n != 1 {
			t.Errorf("the lead's last request shows codex1's idle_notification %d times, want 1", n)
		}
		must(p.waitScreen(regexp.MustCompile(`Teammate\s+@codex1\s+finished`), 0, 30*time.Second))
		step("the screen shows codex1's turn end as a teammate's: %q", around(p.screen(), "Teammate @codex1", 200))
	} else {
		must(p.waitScreen(regexp.MustCompile(`Message\s+from\s+@codex1\s*:\s+Finished\s+its\s+turn`), 0, 30*time.Second))
		step("the screen shows codex1's turn end: %q", around(p.screen(), "Finished its turn", 200))
		must(p.waitFor("codex1's turn end at the lead", 30*time.Second, func() bool {
			r := api.lastMain()
			return r != nil && r.pushed("Finished its turn") > 0
		}))
		for _, r := range api.requests() {
			if n := r.pushed("Finished its turn"); n > 1 {
				t.Errorf("model request %d shows codex1's turn end %d times", r.N, n)
			}
		}
		if fileHas(filepath.Join(teamDir, "inboxes", "team-lead.json"), "idle_notification") {
			b, _ := os.ReadFile(filepath.Join(teamDir, "inboxes", "team-lead.json"))
			t.Errorf("an idle_notification waits in the lead's inbox although it was pushed:\n%s", b)
		}
		// codex1's mail reads as a teammate's message too.
		must(p.waitScreen(regexp.MustCompile(`Message\s+from\s+@codex1\s*:\s+`+regexp.QuoteMeta(reply)), 0, 30*time.Second))
	}
	// Nothing of Claude Code's frame for a peer's message, nor a raw frame,
	// reaches the screen: codex1 reads as a teammate.
	for _, bad := range []string{`Another\s+Claude\s+session\s+sent\s+a\s+message`, `permission\s+laundering`, `"type":\s*"idle_notification"`} {
		if loc := regexp.MustCompile(bad).FindStringIndex(p.screen()); loc != nil {
			t.Errorf("the screen shows %s: %q", bad, p.screen()[max(0, loc[0]-300):min(len(p.screen()), loc[1]+300)])
		}
	}

	// The reply reached the lead once: no request shows it twice, and the
	// last shows it once (pushed; or, once the lead runs a teammate of its
	// own and so reads its inbox file itself, shown from there and not
	// pushed: serve sees that teammate in config.json).
	for _, r := range api.requests() {
		if n := r.pushed(reply); n > 1 {
			t.Errorf("model request %d shows codex1's reply %d times", r.N, n)
			for _, mm := range r.Messages {
				for _, bl := range mm.Blocks {
					if bl.Type == "text" && strings.Contains(bl.Text, reply) {
						t.Logf("a %s text holding it: %q", mm.Role, around(bl.Text, reply, 400))
					}
				}
			}
		}
	}
	if n := api.lastMain().pushed(reply); n != 1 {
		t.Errorf("the lead's last request shows codex1's reply %d times, want 1", n)
	}
	if text := api.lastMain().pushedText(reply); !strings.Contains(text, "codex1") {
		t.Errorf("the reply does not name its sender:\n%s", text)
	}

	// The codex call that started codex1 ran as an MCP task (its first
	// turn): Claude Code learns that it ended at its next tasks/get, up to
	// the second serve suggests between polls after the turn, and then tells
	// the lead (a <task-notification>, which may start a turn of its own).
	// Until then it counts the task as background work still running, and
	// /exit asks whether to stop it ("Background work is running") instead
	// of exiting: the lead exits once Claude Code knows its work is done.
	must(p.waitFor("the codex call's task told to the lead as completed", 30*time.Second, func() bool {
		return taskToldCompleted(api, serveLog)
	}))
	must(p.waitFor("the lead's turns over", 30*time.Second, func() bool { return claudeIdle(debugLog) }))
	step("the lead was told that the codex call's task completed")

	// The lead exits: Claude Code deletes the team directory and ends
	// serve, and nothing of the Codex side is left running.
	p.typeLine("/exit")
	if err := p.waitExit(30 * time.Second); err != nil {
		dump()
		t.Logf("the run's processes: %s", describe(survivors(home)))
		p.stop(5 * time.Second)
		t.Fatalf("claude after /exit: %v", err)
	}
	step("the lead exited")
	if exists(teamDir) {
		t.Errorf("the team directory %s is still there after the lead's exit", teamDir)
	}
	// A process built with -race takes a second or more to exit
	// (ThreadSanitizer's atexit sleep), so allow some time.
	deadline := time.Now().Add(10 * time.Second)
	left := survivors(home)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		left = survivors(home)
	}
	if len(left) > 0 {
		t.Errorf("10 s after the lead's exit, %d process(es) of the run still run: %s", len(left), describe(left))
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// Claude Code ends an MCP server with SIGINT, SIGTERM 100 ms later and
	// SIGKILL 400 ms after that, so serve may not finish its shutdown.
	step("serve finished its shutdown: %v; Claude Code: %q", fileHas(serveLog, "shutdown complete"), grepLines(debugLog, "MCP server process"))
	warns, errs, lines := logLevels(serveLog)
	step("serve's log: %d WARN, %d ERROR lines %q", warns, errs, lines)
	if errs > 0 || warns > maxServeWarnings {
		t.Errorf("serve's log has %d ERROR and %d WARN lines (want none and at most %d):\n%s", errs, warns, maxServeWarnings, strings.Join(lines, "\n"))
	}
	if t.Failed() {
		dump()
	}
}

// serveTaskRE finds the MCP tasks serve made in its log.
var serveTaskRE = regexp.MustCompile(`msg="codex turn runs as an MCP task" .*task=(task-[0-9a-f]+)`)

// taskToldCompleted reports whether serve made an MCP task (the codex
// call's) and Claude Code has told the lead of the conversation that it
// completed: a request of the conversation carries its <task-notification>,
// whose summary names serve's task id.
func taskToldCompleted(api *keyedMock, serveLog string) bool {
	var ids []string
	for _, l := range grepLines(serveLog, "codex turn runs as an MCP task") {
		if m := serveTaskRE.FindStringSubmatch(l); m != nil {
			ids = append(ids, m[1])
		}
	}
	if len(ids) == 0 {
		return false
	}
	for _, r := range api.requests() {
		if !r.Main {
			continue
		}
		text := allText(r)
		done := 0
		for _, id := range ids {
			if strings.Contains(text, "<task-notification>") && strings.Contains(text, "MCP task "+id+" (codex/codex) completed") {
				done++
			}
		}
		if done == len(ids) {
			return true
		}
	}
	return false
}

// claudeIdle reports whether Claude Code's debug log shows a turn of its
// query engine and every one that started as ended ("[engine] turn N
// start", "[engine] turn N end (…)").
func claudeIdle(debugLog string) bool {
	started, ended := 0, 0
	for _, l := range grepLines(debugLog, "[engine] turn ") {
		switch m := engineTurnRE.FindStringSubmatch(l); {
		case m == nil:
		case m[1] == "start":
			started++
		default:
			ended++
		}
	}
	return ended > 0 && started == ended
}

// engineTurnRE is the debug log's line for the start or end of an engine
// turn.
var engineTurnRE = regexp.MustCompile(`\[engine\] turn \d+ (start|end)\b`)

// maxServeWarnings is how many WARN lines serve may log in the whole
// interactive run, the team directory vanishing at the end included: a
// few, not one per poll.
const maxServeWarnings = 3

// shutdownApproved reports whether the lead's inbox in teamDir holds a
// shutdown_response from codex1 approving a request of Claude Code's
// ("shutdown-…").
func shutdownApproved(teamDir string) bool {
	b, err := os.ReadFile(filepath.Join(teamDir, "inboxes", "team-lead.json"))
	if err != nil {
		return false
	}
	var msgs []struct {
		From string `json:"from"`
		Text string `json:"text"`
	}
	if json.Unmarshal(b, &msgs) != nil {
		return false
	}
	for _, m := range msgs {
		var f struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Approve   bool   `json:"approve"`
		}
		if m.From == "codex1" && json.Unmarshal([]byte(m.Text), &f) == nil &&
			f.Type == "shutdown_response" && f.Approve && strings.HasPrefix(f.RequestID, "shutdown-") {
			return true
		}
	}
	return false
}

// seedClaudeJSON writes $HOME/.claude.json so that an interactive Claude
// Code starts without its first-run screens: onboarding done, a theme,
// the API key approved (its last 20 characters) and cwd trusted.
func seedClaudeJSON(t *testing.T, home, cwd string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{claudeKey[len(claudeKey)-20:]}, "rejected": []string{}},
		"projects":               map[string]any{cwd: map[string]any{"hasTrustDialogAccepted": true}},
	})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// newUUID returns a random (version 4) UUID.
func newUUID(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// fileHas reports whether the file holds s.
func fileHas(file, s string) bool {
	b, err := os.ReadFile(file)
	return err == nil && bytes.Contains(b, []byte(s))
}

// teamHasMember reports whether the team's config.json lists name.
func teamHasMember(teamDir, name string) bool {
	b, err := os.ReadFile(filepath.Join(teamDir, "config.json"))
	if err != nil {
		return false
	}
	var cfg struct {
		Members []struct {
			Name string `json:"name"`
		} `json:"members"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return false
	}
	for _, m := range cfg.Members {
		if m.Name == name {
			return true
		}
	}
	return false
}

// sessionStatus is the registry status of identity's latest session in
// the Claude Code session teams' registry, as `atm-agent-mcp sessions`
// lists it ("" when there is none).
func sessionStatus(t *testing.T, home, identity string) string {
	cmd := exec.Command("atm-agent-mcp", "sessions", "--team", "claude-code", "--identity", identity, "--json")
	cmd.Env = append(os.Environ(), "ATM_HOME="+home, "HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	var rows []struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(out, &rows) != nil || len(rows) == 0 {
		return ""
	}
	return rows[0].Status
}
