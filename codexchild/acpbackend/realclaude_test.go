package acpbackend

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
)

// TestACPRealClaude runs the real claude-agent-acp (pinned in
// realacp) through New, offline against the loopback Anthropic
// mock: a first turn with the thread's instructions, a mail sent through
// the thread's own MCP server (mockmcp as "atm"), a Bash call approved
// through the Handler and one denied, a hung turn interrupted, the next
// turn (in a new process, the session loaded: no late answer of the
// interrupted turn), then a new backend continuing the thread by
// session/load, and no process left.
func TestACPRealClaude(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no real agent")
	}
	bin := realacp.Install(t, "claude-agent-acp", filepath.Join("node_modules", ".bin", "claude-agent-acp"))
	mock := realacp.StartAnthropic(t)
	tag := realacp.Tag(t)
	e := newACPEnv(t)
	home, work := t.TempDir(), t.TempDir()
	env := []string{
		"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"ANTHROPIC_BASE_URL=" + mock.URL(), "ANTHROPIC_API_KEY=sk-ant-mock", "ANTHROPIC_MODEL=claude-sonnet-4-5",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"ENABLE_TOOL_SEARCH=false", realacp.TagEnv + "=" + tag,
	}
	if os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1") // else session/new fails: bypass_root
	}
	cfg := Config{Name: "claude", Command: bin, Env: env, Dir: work, Mode: "default", Logger: acpLogger(t), TurnTimeout: 120 * time.Second}
	p := e.params(t)
	p.Cwd = work
	p.Model = "" // claude-agent-acp's model option lists real model ids only
	p.BaseInstructions, p.DeveloperInstructions = "You are m1, a member of a team.", "Mail reaches you as prompts."
	p.ToolServers[0].Env[realacp.TagEnv] = tag

	begin := time.Now()
	run := func(b *Backend, id, prompt string, d ...backend.Decision) (*backend.Result, *acpRecorder) {
		t.Helper()
		rec := newACPRecorder(d...)
		start := time.Now()
		res, err := b.Turn(context.Background(), backend.TurnRequest{ThreadID: id, Prompt: prompt, Params: p, Handler: rec})
		if err != nil {
			t.Fatalf("Turn %q: %v", prompt, err)
		}
		t.Logf("%q (%.1fs): %s %q, %d approvals", prompt, time.Since(start).Seconds(), res.Status, res.Text, len(rec.approvals))
		return res, rec
	}
	b := e.backend(t, cfg)
	res1, rec1 := run(b, "", "TURN ONE: say hello")
	id := res1.ThreadID
	if !strings.Contains(res1.Text, "REPLY TO TURN ONE") || res1.Status != "completed" || id == "" {
		t.Errorf("turn 1: %+v", res1)
	}
	if msgs := messages(rec1); len(msgs) == 0 || msgs[len(msgs)-1] != res1.Text {
		t.Errorf("turn 1 messages %q, want the result's text last", msgs)
	}

	res2, rec2 := run(b, id, `TURN TWO: CALL-TOOL atm_send {"to":"arch","message":"hi"}`, backend.Decision{Kind: backend.Approve})
	if !strings.Contains(res2.Text, `TOOL RESULT: sent as m1:`) {
		t.Errorf("turn 2: %q, want the mail tool's result", res2.Text)
	}
	// Claude Code asks before an MCP tool in mode default: a tool approval.
	if len(rec2.approvals) != 1 || rec2.approvals[0].Kind != backend.ApprovalTool || !strings.Contains(rec2.approvals[0].Message, "atm_send") {
		for _, a := range rec2.approvals {
			t.Logf("approval %+v raw %s", a, a.Raw)
		}
		t.Errorf("turn 2: %d approvals, want one tool approval naming atm_send", len(rec2.approvals))
	}
	if log, _ := os.ReadFile(e.mcpLog); !strings.Contains(string(log), `"to":"arch"`) {
		t.Errorf("the mail server got %q", log)
	}

	ran := filepath.Join(work, "ran.txt")
	res3, rec3 := run(b, id, "TURN THREE: RUN-TOOL", backend.Decision{Kind: backend.Approve})
	if !strings.Contains(res3.Text, "acp-approved") {
		t.Errorf("turn 3: %q, want the approved command's output", res3.Text)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	if len(rec3.approvals) != 1 || rec3.approvals[0].Kind != backend.ApprovalExec || !strings.Contains(rec3.approvals[0].Command, "touch ran.txt") {
		for _, a := range rec3.approvals {
			t.Logf("approval %+v raw %s", a, a.Raw)
		}
		t.Errorf("turn 3: %d approvals, want one exec approval of the command", len(rec3.approvals))
	}
	os.Remove(ran)
	res4, rec4 := run(b, id, "TURN FOUR: RUN-TOOL", backend.Decision{Kind: backend.Deny})
	if _, err := os.Stat(ran); err == nil || len(rec4.approvals) != 1 || strings.Contains(res4.Text, "acp-approved") {
		t.Errorf("turn 4: %q, %d approvals; the denied command must not run", res4.Text, len(rec4.approvals))
	}

	done := make(chan *backend.Result, 1)
	go func() {
		res, err := b.Turn(context.Background(), backend.TurnRequest{ThreadID: id, Prompt: "TURN FIVE: HANG", Params: p})
		if err != nil {
			t.Errorf("turn 5: %v", err)
		}
		done <- res
	}()
	select {
	case <-mock.Hung():
	case <-time.After(90 * time.Second):
		t.Fatal("turn 5's model request never came")
	}
	if err := b.Interrupt(context.Background(), id); err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	if res5 := <-done; res5 == nil || res5.Status != "interrupted" || !res5.IsError {
		t.Errorf("turn 5: %+v, want interrupted", res5)
	}
	// The agent was stopped after the interrupt: this turn runs in a new
	// process on the loaded session, and gets its own answer (not the
	// interrupted turn's late one, claude-agent-acp#551).
	res6, _ := run(b, id, "TURN SIX: still there?")
	if !strings.Contains(res6.Text, "REPLY TO TURN SIX") || res6.ThreadID != id {
		t.Errorf("turn 6: %+v", res6)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}

	b2 := e.backend(t, cfg)
	res7, rec7 := run(b2, id, "TURN SEVEN: after the restart")
	if !strings.Contains(res7.Text, "REPLY TO TURN SEVEN") || res7.ThreadID != id {
		t.Errorf("turn 7 in a new backend: %+v, want the same thread", res7)
	}
	if msgs := messages(rec7); len(msgs) != 1 {
		t.Errorf("turn 7 messages %q: the replay reached the handler", msgs)
	}
	if err := b2.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Logf("7 turns in %.1fs, %d model requests", time.Since(begin).Seconds(), mock.MainRequests())
}
