package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// opencodeEnv returns the environment of an opencode agent offline: a
// fresh home (HOME and the XDG dirs, where it keeps its sessions: the
// same home for a process that loads a session), its model the
// OpenAI-compatible provider "mock" at baseURL, no models.dev fetch, no
// autoupdate, no plugins or LSP downloads, and bash and edits asking for
// permission (OPENCODE_PERMISSION).
func opencodeEnv(home, baseURL string) []string {
	cfg, _ := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"mock": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"options": map[string]any{"baseURL": baseURL, "apiKey": "sk-mock"},
			"models":  map[string]any{"mock-model": map[string]any{}},
		}},
		"model":       "mock/mock-model",
		"small_model": "mock/mock-model",
		"autoupdate":  false,
		"share":       "disabled",
	})
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"OPENCODE_CONFIG_CONTENT=" + string(cfg),
		// Merged over every config file (the user's, the project's): the
		// preset's policy holds whatever they say.
		`OPENCODE_PERMISSION={"bash":"ask","edit":"ask"}`,
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
	}
}

// echoServer returns a stdio MCP server entry that runs this test binary
// as realcodex's echo tool server (tool echo_identity) for identity,
// logging its calls to log, tagged with tag.
func echoServer(t *testing.T, identity, log, tag string) acp.MCPServer {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return acp.MCPServer{Name: "teammail", Command: exe, Args: []string{"-test.run=^$"}, Env: []acp.NameValue{
		{Name: echoIdentityEnv, Value: identity}, {Name: echoLogEnv, Value: log}, {Name: realacp.TagEnv, Value: tag},
	}}
}

// Environment of the test binary run as the echo MCP server.
const (
	echoIdentityEnv = "ACPTEST_ECHO_IDENTITY"
	echoLogEnv      = "ACPTEST_ECHO_LOG"
)

// echoServerMain serves realcodex's echo tool on stdin and stdout, each
// call logged to $ACPTEST_ECHO_LOG, and exits.
func echoServerMain() {
	f, err := os.OpenFile(os.Getenv(echoLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		err = realcodex.ServeEchoTool(os.Stdin, os.Stdout, os.Getenv(echoIdentityEnv), f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// readToolCalls returns the calls an echo server logged to path.
func readToolCalls(path string) ([]realcodex.ToolCall, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var calls []realcodex.ToolCall
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c realcodex.ToolCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return calls, err
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// events returns a copy of the events so far.
func (l *eventLog) events() []acp.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// TestOpencodeACP runs the real opencode (1.18.33, the linux-x64 binary
// pinned in realacp/testdata/opencode/package-lock.json, about 180
// MB) offline against a loopback OpenAI Chat Completions mock: two turns;
// one that calls the echo_identity tool of the stdio MCP server given at
// session/new; one whose bash call is allowed after a permission request
// and one whose call is rejected (permission bash "ask" in its config: its
// own default allows); a turn whose model request hangs, interrupted, and
// one after it; then a new process loads the session (session/load
// replays it) and runs a turn on it, and a third resumes it
// (session/resume: no replay) and runs one. Nothing of any process (the
// MCP server included) is left after Close.
func TestOpencodeACP(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no real agent")
	}
	bin := realacp.Install(t, "opencode", filepath.Join("node_modules", "opencode-linux-x64", "bin", "opencode"))
	mock := realacp.StartOpenAIChat(t)
	tag := realacp.Tag(t)
	home := t.TempDir()
	work := t.TempDir()
	// A project config that allows bash does not win over the environment.
	if err := os.WriteFile(filepath.Join(work, "opencode.json"), []byte(`{"permission":{"bash":"allow","edit":"allow"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(opencodeEnv(home, mock.URL()+"/v1"), realacp.TagEnv+"="+tag)
	var asked []acp.PermissionRequest
	decisions := []acp.Decision{acp.AllowOnce, acp.RejectOnce}
	log := &eventLog{}
	start := time.Now()
	cfg := acp.Config{
		Command: bin, Args: []string{"acp"}, Env: env, Dir: work, Logger: testLogger(t), OnEvent: log.add,
		Asker: acp.AskerFunc(func(ctx context.Context, req acp.PermissionRequest) acp.Decision {
			d := decisions[min(len(asked), len(decisions)-1)]
			asked = append(asked, req)
			return d
		}),
		TurnTimeout: 90 * time.Second,
	}
	c := startReal(t, cfg)
	info := c.Info()
	t.Logf("agent %s %s, capabilities %s (%.1fs)", info.Name, info.Version, info.Capabilities.Raw, time.Since(start).Seconds())
	toolLog := filepath.Join(t.TempDir(), "tools.jsonl")
	s, err := c.NewSession(t.Context(), acp.SessionParams{Cwd: work, MCPServers: []acp.MCPServer{echoServer(t, "oc-agent@team", toolLog, tag)}})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Logf("session %s, modes %+v (%.1fs)", s.ID(), s.Modes(), time.Since(start).Seconds())

	res1 := promptReal(t, s, "TURN ONE: say hello")
	if !strings.Contains(res1.Text, "REPLY TO TURN ONE") || res1.StopReason != acp.StopEndTurn {
		t.Errorf("turn 1: %q %q, want the mock's reply and end_turn", res1.Text, res1.StopReason)
	}
	res2 := promptReal(t, s, "TURN TWO: and again")
	if !strings.Contains(res2.Text, "REPLY TO TURN TWO") {
		t.Errorf("turn 2: %q, want the mock's reply", res2.Text)
	}
	res3 := promptReal(t, s, `TURN THREE: CALL-TOOL echo_identity {"text":"hello from opencode"}`)
	if want := "TOOL RESULT: identity=oc-agent@team thread= text=hello from opencode"; !strings.Contains(res3.Text, want) {
		t.Errorf("turn 3: %q, want %q (tools offered: %q)", res3.Text, want, mock.Tools())
	}
	calls, err := readToolCalls(toolLog)
	if err != nil || len(calls) != 1 || calls[0].Name != realcodex.EchoToolName {
		t.Errorf("MCP server calls %+v (%v), want one echo_identity", calls, err)
	}
	ran := filepath.Join(work, "ran.txt")
	res4 := promptReal(t, s, "TURN FOUR: RUN-TOOL please")
	if !strings.Contains(res4.Text, "TOOL RESULT: acp-approved") {
		t.Errorf("turn 4: %q, want the allowed command's output", res4.Text)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	os.Remove(ran)
	res5 := promptReal(t, s, "TURN FIVE: RUN-TOOL again")
	// Measured: after a rejection opencode fails the tool call and ends the
	// turn (end_turn) without asking the model again, so without text.
	if strings.Contains(res5.Text, "acp-approved") || len(res5.ToolCalls) != 1 || res5.ToolCalls[0].Status != "failed" {
		t.Errorf("turn 5: %q, tool calls %+v; want the rejected call failed", res5.Text, res5.ToolCalls)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the rejected command ran")
	}
	if len(asked) != 2 {
		t.Fatalf("asked %d times, want 2 (bash: ask)", len(asked))
	}
	for i, req := range asked {
		t.Logf("permission: tool %q kind %q options %+v", req.Tool.Title, req.Tool.Kind, req.Options)
		var kinds []string
		for _, o := range req.Options {
			kinds = append(kinds, o.Kind)
		}
		if req.Tool.Kind != "execute" || req.Tool.Title != realacp.RunToolCommand || !slices.Contains(kinds, "allow_once") || !slices.Contains(kinds, "reject_once") {
			t.Errorf("permission %d: tool %+v, option kinds %q; want the command, execute, allow_once and reject_once", i, req.Tool, kinds)
		}
	}
	// opencode announces the tool call before it asks.
	if evs := log.of(s.ID(), 4); len(evs) == 0 || evs[0].Kind != acp.EventToolCall || !evs[0].Created {
		t.Errorf("turn 4 events %+v, want the tool call first", evs)
	}

	// A turn whose model request hangs is interrupted.
	hung := make(chan *acp.TurnResult, 1)
	go func() {
		res, err := s.Prompt(context.Background(), acp.TurnRequest{Text: "TURN SIX: HANG"})
		if err != nil {
			t.Errorf("turn 6: %v", err)
		}
		hung <- res
	}()
	select {
	case <-mock.Hung():
	case <-time.After(60 * time.Second):
		t.Fatal("turn 6's model request never came")
	}
	begin := time.Now()
	if err := s.Interrupt(t.Context()); err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	res6 := <-hung
	if res6 == nil || !res6.Cancelled || res6.StopReason != acp.StopCancelled {
		t.Fatalf("turn 6: %+v, want cancelled", res6)
	}
	t.Logf("turn 6 interrupted in %.1fs: stop %q", time.Since(begin).Seconds(), res6.StopReason)
	// Unlike claude-agent-acp, the turn after a cancel is the turn's own.
	res7 := promptReal(t, s, "TURN SEVEN: still there?")
	if !strings.Contains(res7.Text, "REPLY TO TURN SEVEN") || !res7.AfterCancel {
		t.Errorf("turn 7 after the interrupt: %q (after cancel %v), want the mock's reply", res7.Text, res7.AfterCancel)
	}
	st := c.Status()
	if st.State != acp.StateIdle || st.GarbageLines != 0 || st.BadUpdates != 0 {
		t.Errorf("status %+v, want idle, no garbage, no bad update", st)
	}
	main, side := mock.Requests()
	t.Logf("7 turns in %.1fs; model requests: %d main, %d side", time.Since(start).Seconds(), main, side)
	if err := c.Close(t.Context()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if left := realacp.Leftover(tag, 3*time.Second); len(left) > 0 {
		t.Errorf("after Close, processes left: %q", left)
	}

	// A new process reopens the session with session/load.
	begin = time.Now()
	log2 := &eventLog{}
	cfg.Asker, cfg.OnEvent = nil, log2.add
	c2 := startReal(t, cfg)
	t.Logf("second process started in %.1fs", time.Since(begin).Seconds())
	s2, err := c2.LoadSession(t.Context(), s.ID(), acp.SessionParams{Cwd: work, MCPServers: []acp.MCPServer{echoServer(t, "oc-agent@team", toolLog, tag)}})
	if err != nil {
		t.Fatalf("LoadSession: %v", err)
	}
	replay := s2.Replayed()
	t.Logf("session/load in a new process (%.1fs): %d messages replayed: %q", time.Since(begin).Seconds(), len(replay), replay)
	if len(replay) < 2 || replay[0] != (acp.Message{Role: "user", Text: "TURN ONE: say hello"}) || !strings.Contains(replay[1].Text, "REPLY TO TURN ONE") {
		t.Errorf("replay %q, want turn one first", replay)
	}
	// Every prompt is replayed as a user message with an id of its own,
	// the cancelled and rejected turns' ones too.
	// (OnEvent gets them on a goroutine of its own: wait a little.)
	var prompts []string
	ids := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); len(prompts) < 7 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		prompts, ids = nil, map[string]bool{}
		for _, ev := range log2.events() {
			if ev.Replay && ev.Kind == acp.EventUserMessage {
				prompts = append(prompts, ev.Text)
				ids[ev.MessageID] = true
			}
		}
	}
	want := []string{"TURN ONE: say hello", "TURN TWO: and again", `TURN THREE: CALL-TOOL echo_identity {"text":"hello from opencode"}`,
		"TURN FOUR: RUN-TOOL please", "TURN FIVE: RUN-TOOL again", "TURN SIX: HANG", "TURN SEVEN: still there?"}
	if diff := cmp.Diff(want, prompts); diff != "" || len(ids) != len(want) || ids[""] {
		t.Errorf("replayed prompts (-want +got):\n%s\nmessage ids %v", diff, ids)
	}
	res8 := promptReal(t, s2, "TURN EIGHT: after the restart")
	if !strings.Contains(res8.Text, "REPLY TO TURN EIGHT") || res8.Turn != 1 {
		t.Errorf("turn after load: %+v", res8)
	}
	if err := c2.Close(t.Context()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if left := realacp.Leftover(tag, 3*time.Second); len(left) > 0 {
		t.Errorf("after the second Close, processes left: %q", left)
	}
	// session/resume in a third process: no replay, and the session goes
	// on.
	begin = time.Now()
	c3 := startReal(t, cfg)
	s3, err := c3.ResumeSession(t.Context(), s.ID(), acp.SessionParams{Cwd: work, MCPServers: []acp.MCPServer{echoServer(t, "oc-agent@team", toolLog, tag)}})
	if err != nil {
		t.Fatalf("ResumeSession: %v", err)
	}
	t.Logf("session/resume in a new process (%.1fs)", time.Since(begin).Seconds())
	if n := len(s3.Replayed()); n != 0 {
		t.Errorf("session/resume replayed %d messages, want none", n)
	}
	res9 := promptReal(t, s3, "TURN NINE: after a resume")
	if !strings.Contains(res9.Text, "REPLY TO TURN NINE") {
		t.Errorf("turn after resume: %+v", res9)
	}
	if err := c3.Close(t.Context()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if left := realacp.Leftover(tag, 3*time.Second); len(left) > 0 {
		t.Errorf("after the third Close, processes left: %q", left)
	}
}
