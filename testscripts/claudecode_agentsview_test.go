//go:build linux

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
	"syscall"
	"testing"
	"time"
)

// TestClaudeCodeAgentsView runs the real Claude Code 2.1.332 interactive,
// in a pseudo-terminal, with agent teams on, and presses ← ("for agents",
// offered in the footer of every fresh screen). Claude Code then forks the
// conversation into a background session: a new session id, a new serve,
// a new session team (docs/claude-code-agents-view.md). The lead has
// started the Codex agent codex1 before; after ← and Esc back, the same
// conversation reaches it: the lead's SendMessage to codex1 lands (codex1
// is a member of the new session's team) and starts a Codex turn on
// codex1's thread, and codex-reply with codex1's agent_id answers. The
// serve the conversation left has handed codex1 over and exited: no serve
// of the first session runs on, and the one that runs codex1 is the
// background session's. With mockcodex as app-server, whose threads a new
// Codex process resumes.
func TestClaudeCodeAgentsView(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	run := claudeRun{backend: "app-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	work := filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Claude Code's background sessions run under a daemon of their own
	// session: nothing of the run may outlive the test.
	t.Cleanup(func() {
		for _, pid := range survivors(home) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	seedClaudeJSON(t, home, work)
	sessionID := newUUID(t)
	team := "session-" + sessionID[:8]
	serveLog := filepath.Join(dir, "serve.log")
	childLog := filepath.Join(dir, "child.jsonl")
	debugLog := filepath.Join(dir, "claude-debug.log")
	mcpFile := writeServeMCPConfig(t, dir, home, run, serveLog)

	nonce := randomHex(t, 6)
	mail := "MAIL-" + nonce + " for codex1 after the move"
	reply := "REPLY-" + nonce + " to codex1 after the move"
	agentRE := regexp.MustCompile(`"agent_id":"(codex-[0-9a-z]+)"`)
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.pushed("SENDMAIL") > 0 && r.called("SendMessage") == 0:
			return []mockBlock{{Tool: "SendMessage", Input: map[string]any{"to": "codex1", "summary": "after the move", "message": mail}}}
		case r.pushed("REPLYTOO") > 0 && r.called("mcp__codex__codex-reply") == 0:
			id := ""
			for _, mm := range r.Messages {
				if m := agentRE.FindStringSubmatch(mm.text()); m != nil {
					id = m[1]
				}
			}
			return []mockBlock{{Tool: "mcp__codex__codex-reply", Input: map[string]any{"agent_id": id, "prompt": reply}}}
		case r.pushed("LEADPROMPT") > 0 && r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__codex,mcp__codex__codex-reply,SendMessage", "max_results": 10}}}
		case r.pushed("LEADPROMPT") > 0 && r.called("mcp__codex__codex") == 0:
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "You are codex1, a member of the lead's team.", "identity": "codex1"}}}
		}
		return []mockBlock{{Text: fmt.Sprintf("LEAD DONE %d", r.N)}}
	})

	cmd := exec.Command(claude, "--mcp-config", mcpFile, "--strict-mcp-config", "--permission-mode", "default",
		"--allowedTools", "mcp__codex,SendMessage,ToolSearch", "--debug-file", debugLog, "--session-id", sessionID)
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
		t.Logf("serves: %v", serveSessions(home))
		logTail(t, "serve's log", serveLog, 15000)
		logTail(t, "claude's debug log", debugLog, 8000, "MCP server", "bg", "park", "ERROR")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			dump()
			t.Fatal(err)
		}
	}

	must(p.waitScreen(regexp.MustCompile(`for agents|for shortcuts`), 0, 60*time.Second))
	p.typeLine("LEADPROMPT: start codex1")
	must(p.waitFor("codex1 in "+team, 60*time.Second, func() bool {
		return teamHasMember(filepath.Join(home, ".claude", "teams", team), "codex1")
	}))
	must(p.waitFor("the codex call's result", 60*time.Second, func() bool {
		r := api.lastMain()
		return r != nil && agentRE.MatchString(strings.Join(texts(r), "\n"))
	}))
	thread := codexThread(t, childLog)
	step("codex1 runs in %s on thread %s; serves: %v", team, thread, serveSessions(home))

	// ←: the conversation moves to a background session.
	from := len(p.raw())
	p.typeText("\x1b[D")
	must(p.waitScreen(regexp.MustCompile(`Your session moved to the background`), from, 60*time.Second))
	step("the agents view is open")
	// The serve it left hands codex1 over and exits.
	must(p.waitFor("no serve of "+team, 60*time.Second, func() bool {
		for _, sid := range serveSessions(home) {
			if sid == sessionID {
				return false
			}
		}
		return true
	}))
	step("the first session's serve has exited; serves: %v", serveSessions(home))
	// Esc: back to the conversation, now in the background session. The
	// view takes the key once that session can be opened: press it again
	// until the conversation shows.
	back := func() bool {
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
			from = len(p.raw())
			p.typeText("\x1b")
			if p.waitScreen(regexp.MustCompile(`for agents`), from, 5*time.Second) == nil {
				return true
			}
		}
		return false
	}
	if !back() {
		dump()
		t.Fatal("Esc did not return to the conversation within 90 s")
	}
	step("back in the conversation")
	// codex1 is a member of the background session's team once its serve
	// has taken it up.
	var bgTeam string
	must(p.waitFor("codex1 in the background session's team", 90*time.Second, func() bool {
		bgTeam = memberTeam(home, "codex1", team)
		return bgTeam != ""
	}))
	step("codex1 is a member of %s", bgTeam)

	// (The marker is not the first word: a key typed just after the view
	// closed may be taken by it.)
	p.typeLine("now SENDMAIL: ask codex1 again")
	must(p.waitFor("a Codex turn with the lead's mail", 60*time.Second, func() bool { return fileHas(childLog, mail) }))
	step("codex1's Codex turn ran with the mail")
	must(p.waitFor("SendMessage's result", 60*time.Second, func() bool {
		r := api.lastMain()
		return r != nil && strings.Contains(strings.Join(texts(r), "\n"), "Message sent to codex1")
	}))
	p.typeLine("now REPLYTOO: and reply to codex1")
	must(p.waitFor("codex-reply's turn", 60*time.Second, func() bool { return fileHas(childLog, reply) }))
	must(p.waitFor("codex-reply's result", 60*time.Second, func() bool {
		r := api.lastMain()
		if r == nil {
			return false
		}
		for _, text := range texts(r) {
			if strings.Contains(text, reply) && strings.Contains(text, `"identity":"codex1","status":"completed"`) {
				return true
			}
		}
		return false
	}))
	step("codex-reply to codex1 answered")
	for _, turn := range codexTurns(t, childLog) {
		if strings.Contains(turn.text, mail) || strings.Contains(turn.text, reply) {
			if turn.thread != thread {
				t.Errorf("a turn after the move ran on thread %s, want codex1's %s", turn.thread, thread)
			}
		}
	}
	for _, r := range api.requests() {
		for _, res := range r.results() {
			if strings.Contains(res.Text, "No agent named") || strings.Contains(res.Text, "no session with agent_id") {
				t.Errorf("model request %d: an agent was not reachable: %s", r.N, clipLog(res.Text, 400))
			}
		}
	}

	// One serve runs codex1: the background session's. None of the first
	// session is left.
	list := exec.Command("atm-agent-mcp", "sessions", "--team", "claude-code", "--identity", "codex1", "--json")
	list.Env = append(os.Environ(), "ATM_HOME="+home, "HOME="+home)
	out, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Instance string `json:"instance"`
		Status   string `json:"status"`
		ServePID *int   `json:"serve_pid"`
		Turns    int    `json:"turns"`
	}
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("sessions of codex1: %s (%v)", out, err)
	}
	serves := serveSessions(home)
	if rows[0].Instance != bgTeam || rows[0].Status != "idle" || rows[0].ServePID == nil || serves[*rows[0].ServePID] == sessionID {
		t.Errorf("codex1 after the move: %+v (serves %v); want idle in %s, run by the background session's serve", rows[0], serves, bgTeam)
	}
	for pid, sid := range serves {
		if sid == sessionID {
			t.Errorf("serve %d of the first session still runs", pid)
		}
	}
	if !fileHas(serveLog, "agent handed over") || !fileHas(serveLog, "agent taken up from the conversation's earlier serve") {
		t.Error("serve's log does not tell the hand-over")
	}
	if t.Failed() {
		dump()
	}
}

// texts is the text of every message of r's history, tool results
// included.
func texts(r *modelRequest) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, mm := range r.Messages {
		out = append(out, mm.text())
	}
	return out
}

// serveSessions maps the pid of every serve of the run (HOME=home) to the
// Claude Code session that started it (CLAUDE_CODE_SESSION_ID).
func serveSessions(home string) map[int]string {
	out := map[int]string{}
	for _, pid := range survivors(home) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if len(args) < 2 || filepath.Base(args[0]) != "atm-agent-mcp" || args[1] != "serve" {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "environ"))
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := strings.CutPrefix(string(kv), "CLAUDE_CODE_SESSION_ID="); ok {
				out[pid] = v
			}
		}
	}
	return out
}

// memberTeam returns the session team other than skip whose config.json
// lists name, or "".
func memberTeam(home, name, skip string) string {
	dirs, _ := filepath.Glob(filepath.Join(home, ".claude", "teams", "session-*"))
	for _, d := range dirs {
		if filepath.Base(d) != skip && teamHasMember(d, name) {
			return filepath.Base(d)
		}
	}
	return ""
}

// codexTurn is a turn/start mockcodex received: its thread and text.
type codexTurn struct{ thread, text string }

// codexTurns reads the turn/start requests of mockcodex's log.
func codexTurns(t *testing.T, log string) []codexTurn {
	t.Helper()
	b, _ := os.ReadFile(log)
	var out []codexTurn
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e struct {
			Msg struct {
				Method string `json:"method"`
				Params struct {
					ThreadID string `json:"threadId"`
					Input    []struct {
						Text string `json:"text"`
					} `json:"input"`
				} `json:"params"`
			} `json:"msg"`
		}
		if json.Unmarshal(line, &e) != nil || e.Msg.Method != "turn/start" {
			continue
		}
		var text strings.Builder
		for _, in := range e.Msg.Params.Input {
			text.WriteString(in.Text)
		}
		out = append(out, codexTurn{e.Msg.Params.ThreadID, text.String()})
	}
	return out
}

// codexThread is the thread of the first turn in mockcodex's log.
func codexThread(t *testing.T, log string) string {
	t.Helper()
	turns := codexTurns(t, log)
	if len(turns) == 0 || turns[0].thread == "" {
		t.Fatalf("no turn with a thread in %s", log)
	}
	return turns[0].thread
}
