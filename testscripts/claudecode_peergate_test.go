//go:build unix

package testscripts

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// TestClaudeCodePeerGate pins what serve's pacing (agentmcp's
// proxy/leadgate.go) assumes of the real Claude Code 2.1.332's gate for
// peer messages, by writing lines to its messaging socket directly, as a
// naive pusher would, while the model's request is held (so that nothing
// leaves the queue): of 40 distinct lines of one sender written at once,
// the first 30 reach the model and 10 are dropped as rate-limited; a line
// equal to the same sender's previous one, 250 ms later, is dropped as a
// duplicate, and taken again after another line; another sender's equal
// line is taken. Nothing comes back on the connection. The drops are in
// Claude Code's debug log ("[peer-guard] drop …"); the lines taken are in
// its transcript as queue-operation enqueue records.
func TestClaudeCodePeerGate(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead")
	work, claudeHome := filepath.Join(dir, "work"), filepath.Join(dir, "claude-home")
	for _, d := range []string{work, claudeHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A serve without the push, behind a wrapper that saves the
	// environment Claude Code gives it: the socket and its token.
	envFile := filepath.Join(dir, "serve.env")
	mcpFile := writeMCPFile(t, dir, "sh",
		[]string{"-c", `env > "$0"; exec atm-agent-mcp serve --team dev --no-lead-push --log-file "$1"`, envFile, filepath.Join(dir, "serve.log")},
		map[string]string{"ATM_HOME": atmHome, "HOME": atmHome, "PATH": os.Getenv("PATH")})

	nonce := "GATE-" + randomHex(t, 4)
	type line struct {
		from, content string
		pause         time.Duration // before it, on a new connection
	}
	var lines []line
	for i := range 40 {
		lines = append(lines, line{from: "codex1", content: fmt.Sprintf("%s-%02d.", nonce, i)})
	}
	same, other := nonce+"-same.", nonce+"-other."
	lines = append(lines, line{"codex2", same, 0}, line{"codex2", same, 250 * time.Millisecond},
		line{"codex2", other, 250 * time.Millisecond}, line{"codex2", same, 250 * time.Millisecond},
		line{"codex3", same, 250 * time.Millisecond})

	readBack := make(chan string, 1)
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		if r.called("ToolSearch") == 0 {
			back, err := writePeerLines(envFile, func(c net.Conn) (net.Conn, error) {
				for i, l := range lines {
					if l.pause > 0 {
						c.Close()
						time.Sleep(l.pause)
						var err error
						if c, err = dialMessaging(envFile); err != nil {
							return nil, err
						}
					}
					b, _ := json.Marshal(map[string]any{"type": "user", "from": l.from, "message": map[string]any{"role": "user", "content": l.content}})
					if _, err := c.Write(append(b, '\n')); err != nil {
						return c, fmt.Errorf("line %d: %w", i, err)
					}
				}
				return c, nil
			})
			if err != nil {
				t.Errorf("writing to the messaging socket: %v", err)
			}
			readBack <- back
			time.Sleep(time.Second) // Claude Code reads them before this request ends
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{"query": "select:mcp__codex__agent_status", "max_results": 5}}}
		}
		return []mockBlock{{Text: "all done"}}
	})
	debug := filepath.Join(dir, "claude-debug.log")
	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Read what comes.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose", "--debug-file", debug)
	if cp.err != nil {
		cp.dump(t)
		t.Fatalf("claude -p: %v", cp.err)
	}
	last := api.lastMain()
	if last == nil {
		t.Fatal("no model request")
	}
	var got []string
	for i := range 40 {
		if last.pushed(fmt.Sprintf("%s-%02d.", nonce, i)) > 0 {
			got = append(got, fmt.Sprintf("%02d", i))
		}
	}
	var want []string
	for i := range gatePeerBurst {
		want = append(want, fmt.Sprintf("%02d", i))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("of 40 lines at once, the model got %v, want the first %d", got, gatePeerBurst)
	}
	if n := last.pushed(same); n != 3 { // codex2's first and third, codex3's
		t.Errorf("the model got the repeated line %d times, want 3 (a repeat within 30 s dropped, after another line taken)", n)
	}
	if n := last.pushed(other); n != 1 {
		t.Errorf("the model got codex2's other line %d times, want 1", n)
	}
	select {
	case back := <-readBack:
		if back != "" {
			t.Errorf("Claude Code wrote on the connection: %q", back)
		}
	default:
		t.Error("the lines were never written")
	}
	drops := strings.Join(grepLines(debug, "[peer-guard] drop "), "\n")
	if n := strings.Count(drops, "drop rate-limited from codex1"); n != 40-gatePeerBurst {
		t.Errorf("debug log: %d rate-limited drops from codex1, want %d:\n%s", n, 40-gatePeerBurst, drops)
	}
	if n := strings.Count(drops, "drop duplicate from codex2"); n != 1 {
		t.Errorf("debug log: %d duplicate drops from codex2, want 1:\n%s", n, drops)
	}
	if t.Failed() {
		api.dump()
		logTail(t, "claude's debug log", debug, 0, "peer-guard", "uds-messaging")
	}
}

// gatePeerBurst is the burst of Claude Code 2.1.332's gate (bucketCapacity).
const gatePeerBurst = 30

// TestClaudeCodeLeadPushBurst: a Codex agent's burst of 43 mails to the
// lead within a second (40 distinct, then one text three times) while the
// real Claude Code 2.1.332's model request is held, so that every pushed
// line waits in its queue: serve paces the lines under Claude Code's gate,
// so the model sees every mail exactly once, the repeated one three
// times; Claude Code's debug log shows no dropped peer message, and the
// inbox has every mail marked read. Before the pacing, 13 of them were
// dropped (TestClaudeCodePeerGate).
func TestClaudeCodeLeadPushBurst(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	teamDir := makeTeam(t, atmHome, "team-lead", "codex1")
	work, claudeHome := filepath.Join(dir, "work"), filepath.Join(dir, "claude-home")
	for _, d := range []string{work, claudeHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	serveLog := filepath.Join(dir, "serve.log")
	mcpFile := writeServeMCPConfig(t, dir, atmHome, claudeRun{backend: "app-server", codexBin: mockcodexBin,
		env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}}, serveLog, "--team", "dev")

	nonce := "BURST-" + randomHex(t, 4)
	var texts []string
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("%s-%02d. step %d is done", nonce, i, i))
	}
	same := nonce + "-same. tests pass"
	texts = append(texts, same, same, same)
	seenAll := func(r *modelRequest) bool {
		for _, text := range texts[:40] {
			if r.pushed(text) == 0 {
				return false
			}
		}
		return r.pushed(same) >= 3
	}
	atm, err := atmclient.New(atmclient.Config{Home: atmHome})
	if err != nil {
		t.Fatal(err)
	}
	sentIn := make(chan time.Duration, 1)
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.called("ToolSearch") == 0:
			// The agent's burst, while this request is held: every line
			// serve pushes waits in Claude Code's queue.
			start := time.Now()
			for _, text := range texts {
				if _, err := atm.Send(context.Background(), atmclient.SendRequest{From: "codex1", Team: "dev", To: "team-lead", Text: text}); err != nil {
					t.Errorf("send: %v", err)
				}
			}
			sentIn <- time.Since(start)
			time.Sleep(2 * time.Second)
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{"query": "select:mcp__codex__agent_status", "max_results": 5}}}
		case seenAll(r):
			return []mockBlock{{Text: "all done"}}
		case r.called("mcp__codex__agent_status") < 30: // a line still paced: look again
			time.Sleep(500 * time.Millisecond)
			return []mockBlock{{Tool: "mcp__codex__agent_status", Input: map[string]any{}}}
		}
		return []mockBlock{{Text: "mail is missing"}}
	})
	debug := filepath.Join(dir, "claude-debug.log")
	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Read your team's mail.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__codex",
		"--debug-file", debug)
	select {
	case d := <-sentIn:
		t.Logf("43 mails sent in %.2fs", d.Seconds())
	default:
		t.Error("the mails were never sent")
	}
	if cp.err != nil {
		cp.dump(t)
		t.Fatalf("claude -p: %v", cp.err)
	}
	if res := streamResult(t, cp.stdout.Bytes()); res != "all done" {
		t.Errorf("Claude's result is %q, want %q", res, "all done")
	}
	last := api.lastMain()
	for i, text := range texts[:40] {
		if n := last.pushed(text); n != 1 {
			t.Errorf("mail %d reached the model %d times, want once", i, n)
		}
	}
	if n := last.pushed(same); n != 3 {
		t.Errorf("the mail sent three times reached the model %d times, want 3", n)
	}
	noPeerDrops(t, debug)
	allRead(t, teamDir, "team-lead", len(texts))
	if t.Failed() {
		api.dump()
		logTail(t, "serve's log", serveLog, 8000, "lead", "push", "paced")
		logTail(t, "claude's debug log", debug, 0, "peer-guard", "uds-messaging")
	}
}

// TestClaudeCodeLeadPushDuringCall: while the real Claude Code 2.1.332's
// lead waits 20 s in a call of serve's (codex, a slow turn), so that its
// model takes nothing from its queue, two agents mail it 70 times, one
// mail every 250 ms: more lines than Claude Code queues (50). serve keeps
// what would not fit unread until the call is answered, then pushes it
// (merged), so the model sees every mail exactly once and Claude Code's
// debug log shows no dropped peer message.
func TestClaudeCodeLeadPushDuringCall(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	mockcodexBin, err := exec.LookPath("mockcodex")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	teamDir := makeTeam(t, atmHome, "team-lead", "codex1", "codex2", "codex3")
	work, claudeHome := filepath.Join(dir, "work"), filepath.Join(dir, "claude-home")
	for _, d := range []string{work, claudeHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	serveLog := filepath.Join(dir, "serve.log")
	mcpFile := writeServeMCPConfig(t, dir, atmHome, claudeRun{backend: "app-server", codexBin: mockcodexBin,
		env: map[string]string{"MOCKCODEX_VERSION": testedAppVersion}}, serveLog, "--team", "dev")

	nonce := "CALL-" + randomHex(t, 4)
	type mail struct{ from, text string }
	var mails []mail
	for i := range 70 {
		mails = append(mails, mail{[]string{"codex1", "codex3"}[i%2], fmt.Sprintf("%s-%02d. part %d is ready", nonce, i, i)})
	}
	seenAll := func(r *modelRequest) bool {
		for _, m := range mails {
			if r.pushed(m.text) == 0 {
				return false
			}
		}
		return true
	}
	atm, err := atmclient.New(atmclient.Config{Home: atmHome})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	api := startKeyedMock(t, func(r *modelRequest) []mockBlock {
		switch {
		case r.called("ToolSearch") == 0:
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__codex,mcp__codex__agent_status", "max_results": 5}}}
		case r.called("mcp__codex__codex") == 0:
			go func() { // the mails, while the call lasts
				time.Sleep(time.Second)
				for _, m := range mails {
					if _, err := atm.Send(context.Background(), atmclient.SendRequest{From: m.from, Team: "dev", To: "team-lead", Text: m.text}); err != nil {
						sent <- err
						return
					}
					time.Sleep(250 * time.Millisecond)
				}
				sent <- nil
			}()
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"prompt": "SLOW=20 keep working", "identity": "codex2"}}}
		case seenAll(r):
			return []mockBlock{{Text: "all done"}}
		case r.called("mcp__codex__agent_status") < 60: // mail still on its way: look again
			time.Sleep(500 * time.Millisecond)
			return []mockBlock{{Tool: "mcp__codex__agent_status", Input: map[string]any{}}}
		}
		return []mockBlock{{Text: "mail is missing"}}
	})
	debug := filepath.Join(dir, "claude-debug.log")
	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Start codex2 and read your team's mail.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__codex",
		"--debug-file", debug)
	if cp.err != nil {
		cp.dump(t)
		t.Fatalf("claude -p: %v", cp.err)
	}
	select {
	case err := <-sent:
		if err != nil {
			t.Errorf("send: %v", err)
		}
	default:
		t.Error("the mails were not all sent")
	}
	if res := streamResult(t, cp.stdout.Bytes()); res != "all done" {
		t.Errorf("Claude's result is %q, want %q", res, "all done")
	}
	last := api.lastMain()
	for i, m := range mails {
		if n := last.pushed(m.text); n != 1 {
			t.Errorf("mail %d reached the model %d times, want once", i, n)
		}
	}
	noPeerDrops(t, debug)
	allRead(t, teamDir, "team-lead", len(mails))
	if t.Failed() {
		api.dump()
		logTail(t, "serve's log", serveLog, 8000, "lead", "push", "paced", "gate")
		logTail(t, "claude's debug log", debug, 0, "peer-guard", "uds-messaging")
	}
}

// writePeerLines connects to the messaging socket of the Claude Code whose
// MCP server saved its environment in envFile, with the auth line, lets
// write use the connection (it may replace it, and returns the one in
// use), then closes the writing side and returns what Claude Code wrote
// back within 2 s.
func writePeerLines(envFile string, write func(net.Conn) (net.Conn, error)) (string, error) {
	c, err := dialMessaging(envFile)
	if err != nil {
		return "", err
	}
	c, err = write(c)
	if c == nil {
		return "", err
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok || err != nil {
		return "", err
	}
	uc.CloseWrite()
	uc.SetReadDeadline(time.Now().Add(2 * time.Second))
	var back strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := uc.Read(buf)
		back.Write(buf[:n])
		if err != nil {
			return back.String(), nil
		}
	}
}

// dialMessaging connects to the messaging socket named in envFile and
// writes the auth line with its token.
func dialMessaging(envFile string) (net.Conn, error) {
	env := map[string]string{}
	b, err := os.ReadFile(envFile)
	if err != nil {
		return nil, fmt.Errorf("the MCP server's environment: %w", err)
	}
	for _, kv := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	c, err := net.Dial("unix", env["CLAUDE_CODE_MESSAGING_SOCKET"])
	if err != nil {
		return nil, err
	}
	tok, _ := json.Marshal(map[string]string{"type": "auth", "token": env["CLAUDE_CODE_MESSAGING_TOKEN"]})
	if _, err := c.Write(append(tok, '\n')); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// noPeerDrops fails the test when Claude Code's debug log says its peer
// guard dropped a message.
func noPeerDrops(t *testing.T, debug string) {
	t.Helper()
	if drops := grepLines(debug, "[peer-guard]"); len(drops) > 0 {
		t.Errorf("Claude Code dropped peer messages:\n%s", strings.Join(drops, "\n"))
	}
}

// allRead fails the test unless identity's inbox in teamDir holds want
// messages, every one read.
func allRead(t *testing.T, teamDir, identity string, want int) {
	t.Helper()
	var inbox []struct {
		Read bool `json:"read"`
	}
	b, _ := os.ReadFile(filepath.Join(teamDir, "inboxes", identity+".json"))
	if err := json.Unmarshal(b, &inbox); err != nil || len(inbox) != want {
		t.Errorf("%s's inbox holds %d messages (%v), want %d", identity, len(inbox), err, want)
	}
	for i, m := range inbox {
		if !m.Read {
			t.Errorf("mail %d is unread", i)
		}
	}
}
