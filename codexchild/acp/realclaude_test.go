package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
)

// TestClaudeAgentACP runs the real claude-agent-acp (0.101.0, pinned in
// realacp/testdata/claude-agent-acp/package-lock.json; it brings
// the Claude Code binary, about 400 MB, installed once into the repo's
// .cache) offline
// against a loopback Anthropic Messages mock: two turns, the second one
// running Bash after a permission request the client allows (mode
// "default": the adapter's own "auto" would decide by itself), a third
// whose Bash call is rejected, a fourth whose model request hangs,
// interrupted, and two after it (the first of which shows the adapter's
// cancel quirk); then a new process loads the session (session/load
// replays it) and runs a turn on it.
func TestClaudeAgentACP(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no real agent")
	}
	bin := realacp.Install(t, "claude-agent-acp", filepath.Join("node_modules", ".bin", "claude-agent-acp"))
	mock := realacp.StartAnthropic(t)
	home := t.TempDir()
	work := t.TempDir()
	env := []string{
		"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"ANTHROPIC_BASE_URL=" + mock.URL(), "ANTHROPIC_API_KEY=sk-ant-mock", "ANTHROPIC_MODEL=claude-sonnet-4-5",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"ENABLE_TOOL_SEARCH=false",
	}
	if os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1") // else session/new fails: bypass_root
	}
	var asked []acp.PermissionRequest
	decisions := []acp.Decision{acp.AllowOnce, acp.RejectOnce}
	log := &eventLog{}
	start := time.Now()
	c := startReal(t, acp.Config{
		Command: bin, Env: env, Dir: work, Logger: testLogger(t), OnEvent: log.add,
		Asker: acp.AskerFunc(func(ctx context.Context, req acp.PermissionRequest) acp.Decision {
			d := decisions[min(len(asked), len(decisions)-1)]
			asked = append(asked, req)
			return d
		}),
		TurnTimeout: 90 * time.Second,
	})
	info := c.Info()
	t.Logf("agent %s %s, capabilities %s (%.1fs)", info.Name, info.Version, info.Capabilities.Raw, time.Since(start).Seconds())
	s, err := c.NewSession(t.Context(), acp.SessionParams{Cwd: work, Mode: "default"})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Logf("session %s, modes %+v (%.1fs)", s.ID(), s.Modes(), time.Since(start).Seconds())

	res1 := promptReal(t, s, "TURN ONE: say hello")
	if !strings.Contains(res1.Text, "REPLY TO TURN ONE") || res1.StopReason != acp.StopEndTurn {
		t.Errorf("turn 1: %q %q, want the mock's reply and end_turn", res1.Text, res1.StopReason)
	}
	ran := filepath.Join(work, "ran.txt")
	res2 := promptReal(t, s, "TURN TWO: RUN-TOOL please")
	if !strings.Contains(res2.Text, "TOOL RESULT: acp-approved") {
		t.Errorf("turn 2: %q, want the allowed command's output", res2.Text)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	os.Remove(ran)
	res3 := promptReal(t, s, "TURN THREE: RUN-TOOL again")
	if strings.Contains(res3.Text, "TOOL RESULT: acp-approved") || !strings.Contains(res3.Text, "TOOL RESULT:") {
		t.Errorf("turn 3: %q, want a tool result that is not the command's output", res3.Text)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the rejected command ran")
	}
	// A turn whose model request hangs is interrupted: session/cancel ends
	// it (claude-agent-acp answers cancelled) without a kill.
	hung := make(chan *acp.TurnResult, 1)
	go func() {
		res, err := s.Prompt(context.Background(), acp.TurnRequest{Text: "TURN FOUR: HANG"})
		if err != nil {
			t.Errorf("turn 4: %v", err)
		}
		hung <- res
	}()
	select {
	case <-mock.Hung():
	case <-time.After(60 * time.Second):
		t.Fatal("turn 4's model request never came")
	}
	begin := time.Now()
	if err := s.Interrupt(t.Context()); err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	res4 := <-hung
	t.Logf("turn 4 interrupted in %.1fs: stop %q cancelled %v", time.Since(begin).Seconds(), res4.StopReason, res4.Cancelled)
	if res4 == nil || res4.StopReason != acp.StopCancelled || !res4.Cancelled {
		t.Errorf("turn 4: %+v, want cancelled", res4)
	}
	// Measured quirk of claude-agent-acp 0.101.0 (claude-agent-acp#551):
	// it answers the cancel at once, but Claude Code goes on with the
	// interrupted turn's model request (and retries it without streaming
	// when the stream stalls); that request's answer becomes the *next*
	// prompt's result. The turn after that is normal again. A facade must
	// not reuse the process right after an interrupt unless it can tell
	// (restart and session/load, or a throwaway turn). If this fails after
	// an upgrade, the quirk is gone: update the note.
	res5 := promptReal(t, s, "TURN FIVE: still there?")
	if !strings.Contains(res5.Text, "LATE ANSWER TO TURN FOUR") || !res5.AfterCancel {
		t.Errorf("turn 5 after the interrupt: %q; the measured quirk was the interrupted turn's late answer", res5.Text)
	}
	res6 := promptReal(t, s, "TURN SIX: and now?")
	if !strings.Contains(res6.Text, "REPLY TO TURN SIX") || res6.AfterCancel {
		t.Errorf("turn 6: %q, want the mock's reply", res6.Text)
	}
	if len(asked) != 2 {
		t.Fatalf("asked %d times, want 2 (mode default asks)", len(asked))
	}
	for _, req := range asked {
		t.Logf("permission: tool %q kind %q options %+v", req.Tool.Title, req.Tool.Kind, req.Options)
	}
	if len(res2.ToolCalls) == 0 || res2.ToolCalls[0].Status != "completed" {
		t.Errorf("turn 2 tool calls %+v, want a completed one", res2.ToolCalls)
	}
	st := c.Status()
	if st.State != acp.StateIdle || st.GarbageLines != 0 || st.BadUpdates != 0 {
		t.Errorf("status %+v, want idle, no garbage, no bad update", st)
	}
	if err := c.Close(t.Context()); err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Logf("6 turns in %.1fs; model requests: %d main", time.Since(start).Seconds(), mock.MainRequests())

	// A new process reopens the session with session/load: the history
	// is replayed (kept, not taken for a turn), and the session goes on.
	begin = time.Now()
	c2 := startReal(t, acp.Config{Command: bin, Env: env, Dir: work, Logger: testLogger(t), TurnTimeout: 90 * time.Second})
	s2, err := c2.LoadSession(t.Context(), s.ID(), acp.SessionParams{Cwd: work, Mode: "default"})
	if err != nil {
		t.Fatalf("LoadSession: %v", err)
	}
	replay := s2.Replayed()
	t.Logf("session/load in a new process (%.1fs): %d messages replayed", time.Since(begin).Seconds(), len(replay))
	if len(replay) < 2 || replay[0] != (acp.Message{Role: "user", Text: "TURN ONE: say hello"}) || !strings.Contains(replay[1].Text, "REPLY TO TURN ONE") {
		t.Errorf("replay %q, want turn one first", replay)
	}
	res7 := promptReal(t, s2, "TURN SEVEN: after the restart")
	if !strings.Contains(res7.Text, "REPLY TO TURN SEVEN") || res7.Turn != 1 || len(res7.Messages) != 1 {
		t.Errorf("turn after load: %+v", res7)
	}
}

func startReal(t *testing.T, cfg acp.Config) *acp.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := acp.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func promptReal(t *testing.T, s *acp.Session, text string) *acp.TurnResult {
	t.Helper()
	start := time.Now()
	res, err := s.Prompt(t.Context(), acp.TurnRequest{Text: text})
	if err != nil {
		t.Fatalf("Prompt %q: %v", text, err)
	}
	t.Logf("turn %d (%.1fs): %q %s, messages %q, tools %d", res.Turn, time.Since(start).Seconds(), res.Text, res.StopReason, res.Messages, len(res.ToolCalls))
	return res
}
