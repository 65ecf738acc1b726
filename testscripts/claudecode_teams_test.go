//go:build linux

package testscripts

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/modelmock"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/realcodex"
)

// claudeKey is the API key the offline runs give Claude Code; the mock
// accepts any.
const claudeKey = "sk-ant-offline-test-key-0123456789abcdef"

// TestClaudeCodeLeadPush runs the real Claude Code 2.1.332 headless (-p),
// where it never reads the lead's inbox file: Claude starts two Codex
// agents in the team dev (serve holds team-lead for its client), gives
// codex2 a long background turn and codex1 a background turn in which the
// agent's model calls atm_send to team-lead, and waits in agent_wait for
// codex2. serve pushes codex1's mail through the messaging socket Claude
// Code offers its MCP servers, and the model's next request (the one that
// brings agent_wait's result) carries it, with the sender and the text,
// exactly once, while the inbox file keeps it. With mockcodex on both
// protocols, and once with the real Codex 0.169 against the loopback
// Responses API.
func TestClaudeCodeLeadPush(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []claudeRun{
		{backend: "app-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": "0.169.0"}},
		{backend: "mcp-server", codexBin: mockcodexBin, env: map[string]string{"MOCKCODEX_VERSION": "0.153.4"}},
	} {
		t.Run("mockcodex/"+run.backend, func(t *testing.T) {
			t.Parallel()
			leadPush(t, claude, run)
		})
	}
	t.Run("real-codex-0.169", func(t *testing.T) {
		t.Parallel()
		codex := realcodex.Bin(t, realcodex.AppServer)
		mock, err := modelmock.Start(modelmock.Config{})
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
		leadPush(t, claude, claudeRun{backend: "app-server", codexBin: codex, env: env})
	})
}

// leadPush is one -p conversation of TestClaudeCodeLeadPush.
func leadPush(t *testing.T, claude string, run claudeRun) {
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
	// serve holds team-lead for its client; Codex sessions started without
	// an identity would take another name (were it team-lead too, the
	// lead's mail would be theirs, and not pushed).
	env := map[string]string{"ATM_AGENT_MCP_DEFAULT_IDENTITY": "codex"}
	for k, v := range run.env {
		env[k] = v
	}
	run.env = env
	mcpFile := writeServeMCPConfig(t, dir, atmHome, run, serveLog, "--team", "dev", "--identity", "team-lead")

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

	ctx, cancel := context.WithTimeout(context.Background(), claudeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Use the codex tools as scripted.", "--mcp-config", mcpFile, "--strict-mcp-config",
		"--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__codex", "--debug-file", filepath.Join(dir, "claude-debug.log"))
	cmd.Dir = work
	cmd.Env = claudeEnv(claudeHome, api.URL())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("claude -p: %.1fs", time.Since(start).Seconds())
	dump := func() {
		api.dump()
		t.Logf("claude stdout:\n%s", clipLog(stdout.String(), 6000))
		t.Logf("claude stderr:\n%s", clipLog(stderr.String(), 3000))
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

// writeServeMCPConfig writes Claude Code's --mcp-config for serve (the
// server "codex") with the ATM home atmHome, run's Codex and its
// environment, and extra arguments; it returns the file's path.
func writeServeMCPConfig(t *testing.T, dir, atmHome string, run claudeRun, serveLog string, extra ...string) string {
	t.Helper()
	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ATM_HOME": atmHome, "HOME": atmHome, "MOCKCODEX_LOG": filepath.Join(dir, "child.jsonl"),
		"PATH": os.Getenv("PATH"), "GIT_CEILING_DIRECTORIES": dir}
	for k, v := range run.env {
		env[k] = v
	}
	args := append([]string{"serve", "--codex-bin", run.codexBin, "--backend", run.backend,
		"--log-level", "debug", "--log-file", serveLog}, extra...)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"codex": map[string]any{"command": proxy, "args": args, "env": env}}})
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// claudeEnv is the environment of an offline Claude Code: its own HOME,
// the mock API, nothing sent elsewhere.
func claudeEnv(home, apiURL string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + apiURL, "ANTHROPIC_API_KEY=" + claudeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "TMPDIR=" + os.TempDir(),
		"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1"} // the interactive CLI would git clone it from GitHub
	return append(env, extra...)
}

// streamResult returns the result of Claude Code's stream-json output.
func streamResult(t *testing.T, out []byte) string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	result := ""
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			Subtype string `json:"subtype"`
			IsError bool   `json:"is_error"`
			Result  string `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "result" {
			if ev.IsError || ev.Subtype != "success" {
				t.Errorf("result: subtype %q is_error %v result %q", ev.Subtype, ev.IsError, ev.Result)
			}
			result = ev.Result
		}
	}
	return result
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

// pushed counts the occurrences of s in the text blocks of r's history
// (not in tool results, not in the model's tool calls): a message that
// reached the model outside any tool.
func (r *modelRequest) pushed(s string) int {
	n := 0
	for _, mm := range r.Messages {
		for _, bl := range mm.Blocks {
			if bl.Type == "text" {
				n += strings.Count(bl.Text, s)
			}
		}
	}
	return n
}

// pushedText is the first text block of r's history that holds s.
func (r *modelRequest) pushedText(s string) string {
	for _, mm := range r.Messages {
		for _, bl := range mm.Blocks {
			if bl.Type == "text" && strings.Contains(bl.Text, s) {
				return bl.Text
			}
		}
	}
	return ""
}

// around returns the part of s within n bytes of the first sub.
func around(s, sub string, n int) string {
	i := strings.Index(s, sub)
	if i < 0 {
		return ""
	}
	return s[max(0, i-n):min(len(s), i+len(sub)+n)]
}

// randomHex returns n random bytes in hex.
func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// logTail writes the end of a log file to the test log (n bytes, 0 for
// all); with filters, only the lines that contain one of them.
func logTail(t *testing.T, name, file string, n int, filters ...string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Logf("%s: %v", name, err)
		return
	}
	text := string(b)
	if len(filters) > 0 {
		var keep []string
		for _, line := range strings.Split(text, "\n") {
			for _, f := range filters {
				if strings.Contains(line, f) {
					keep = append(keep, line)
					break
				}
			}
		}
		text = strings.Join(keep, "\n")
	}
	if n > 0 {
		text = clipLog(text, n)
	}
	t.Logf("%s:\n%s", name, text)
}

// grepLines returns the lines of file that contain s.
func grepLines(file, s string) []string {
	b, _ := os.ReadFile(file)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// logLevels counts the lines of serve's log (slog text or JSON) at WARN
// and at ERROR.
func logLevels(file string) (warn, errs int, lines []string) {
	b, _ := os.ReadFile(file)
	re := regexp.MustCompile(`level=(WARN|ERROR)|"level":"(WARN|ERROR)"`)
	for _, line := range strings.Split(string(b), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		lines = append(lines, line)
		if m[1] == "WARN" || m[2] == "WARN" {
			warn++
		} else {
			errs++
		}
	}
	return warn, errs, lines
}

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
// log.
func TestClaudeCodeTeams(t *testing.T) {
	t.Parallel()
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
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
	mcpFile := writeServeMCPConfig(t, dir, home, claudeRun{backend: "app-server", codexBin: mockcodexBin,
		env: map[string]string{"MOCKCODEX_VERSION": "0.169.0"}}, serveLog)

	nonce := randomHex(t, 6)
	ask := "LEAD-ASKS-" + nonce
	reply := "REPLY-" + nonce + " from codex1"
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__codex,mcp__codex__agent_sessions,SendMessage", "max_results": 10}}}
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
		logTail(t, "serve's log", serveLog, 15000)
		logTail(t, "claude's debug log (teams, mailbox, messaging, MCP errors)", debugLog, 15000,
			"uds-messaging", "Mailbox", "InboxPoller", "team", "SendMessage", "ERROR", "rror")
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
	must(p.waitFor("the shutdown_response", 30*time.Second, func() bool { return shutdownApproved(teamDir) }))
	step("codex1 answered shutdown_response approve=true")
	must(p.waitFor("codex1 gone from "+team+"/config.json", 30*time.Second, func() bool { return !teamHasMember(teamDir, "codex1") }))
	step("codex1 left the team")
	must(p.waitFor("the lead's last turn", 30*time.Second, func() bool {
		r := api.lastMain()
		return r != nil && r.called("SendMessage") == 2 && len(r.results()) > 0
	}))
	must(p.waitScreen(regexp.MustCompile(`LEAD DONE`), 0, 30*time.Second)) // its turn has ended
	// The mail turn's end was told as a native teammate tells it: an
	// idle_notification in the lead's inbox, left for Claude Code's own
	// reader (which this lead, with no teammate of its own, never runs).
	if !fileHas(filepath.Join(teamDir, "inboxes", "team-lead.json"), "idle_notification") {
		b, _ := os.ReadFile(filepath.Join(teamDir, "inboxes", "team-lead.json"))
		t.Errorf("no idle_notification from codex1 in the lead's inbox:\n%s", b)
	}

	// The reply reached the lead once: no request shows it twice, and the
	// last shows it once (the lead does not read its inbox file, having
	// spawned no teammate of its own: the push brought it).
	for _, r := range api.requests() {
		if n := r.pushed(reply); n > 1 {
			t.Errorf("model request %d shows codex1's reply %d times", r.N, n)
		}
	}
	if n := api.lastMain().pushed(reply); n != 1 {
		t.Errorf("the lead's last request shows codex1's reply %d times, want 1", n)
	}
	if text := api.lastMain().pushedText(reply); !strings.Contains(text, "codex1") {
		t.Errorf("the reply does not name its sender:\n%s", text)
	}

	// The lead exits: Claude Code deletes the team directory and ends
	// serve, and nothing of the Codex side is left running.
	p.typeLine("/exit")
	if err := p.waitExit(30 * time.Second); err != nil {
		dump()
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
	step("serve's log: %d WARN, %d ERROR lines", warns, errs)
	if errs > 0 || warns > maxServeWarnings {
		t.Errorf("serve's log has %d ERROR and %d WARN lines (want none and at most %d):\n%s", errs, warns, maxServeWarnings, strings.Join(lines, "\n"))
	}
	if t.Failed() {
		dump()
	}
}

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
