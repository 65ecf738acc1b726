package acpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestACPTwoTurns: a new thread's first prompt carries its instructions
// (the mock echoes it), the session is opened with the thread's cwd, mode,
// model and MCP server, the agent sends mail through that server, and the
// second turn sends Preamble+Prompt on the same session; events arrive as
// activities, hooks are called once.
func TestACPTwoTurns(t *testing.T) {
	e := newACPEnv(t)
	b := e.backend(t, e.config(t))
	p := e.params(t)
	rec := newACPRecorder()
	var sent, accepted atomic.Int32
	res := acpTurnOK(t, b, backend.TurnRequest{Prompt: "echo\ntool t1 ls -l\nplan\nusage 10 100", Params: p, Handler: rec,
		OnSent: func() { sent.Add(1) }, OnAccepted: func() { accepted.Add(1) }})
	want := "BASE INSTRUCTIONS\n\nDEVELOPER INSTRUCTIONS\n\necho\ntool t1 ls -l\nplan\nusage 10 100"
	if res.Text != want || res.Status != "completed" || res.IsError || res.ThreadID == "" || res.TurnID != "1" {
		t.Errorf("turn 1: %+v, want the echo of %q, completed", res, want)
	}
	if sent.Load() != 1 || accepted.Load() != 1 {
		t.Errorf("OnSent %d, OnAccepted %d times, want 1 each", sent.Load(), accepted.Load())
	}
	wantActs := []string{
		"turn_started model=mock-large", // the model it was set to (session/set_config_option)
		"item t1 command running \"ls -l\" started=true",
		"item t1 command completed \"\" started=false",
		"note plan: step one (in_progress)",
		"tokens ",
		"message " + want,
	}
	if d := cmp.Diff(wantActs, rec.activities()); d != "" {
		t.Errorf("turn 1 activities (-want +got):\n%s", d)
	}
	if rec.flushes == 0 {
		t.Errorf("the Flusher was never flushed")
	}

	rec2 := newACPRecorder()
	res2 := acpTurnOK(t, b, backend.TurnRequest{ThreadID: res.ThreadID, Preamble: "[mail from arch]\n", Prompt: "echo\nstatus\nmcp atm atm_send {\"to\":\"arch\",\"message\":\"hi\"}",
		Params: p, Handler: rec2})
	if res2.ThreadID != res.ThreadID || res2.TurnID != "2" || res2.Status != "completed" {
		t.Errorf("turn 2: %+v, want the same thread", res2)
	}
	msgs := messages(rec2)
	wantMsgs := []string{
		"[mail from arch]\necho\nstatus\nmcp atm atm_send {\"to\":\"arch\",\"message\":\"hi\"}",
		"mode=default model=mock-large cwd=" + p.Cwd + " mcp=atm",
		`sent as m1: {"to":"arch","message":"hi"}`,
	}
	if d := cmp.Diff(wantMsgs, msgs); d != "" {
		t.Errorf("turn 2 messages (-want +got):\n%s", d)
	}
	if res2.Text != wantMsgs[2] {
		t.Errorf("turn 2 text %q, want the last message", res2.Text)
	}
	log, _ := os.ReadFile(e.mcpLog)
	if got := string(log); got != "m1 {\"to\":\"arch\",\"message\":\"hi\"}\n" {
		t.Errorf("the MCP server got %q", got)
	}
	st := b.Status()
	if st.Protocol != Protocol || !st.Started || !st.Running || st.PID == 0 || st.Version != "1.0.0" || st.Exit != nil {
		t.Errorf("status %+v", st)
	}
}

// messages returns the texts of the ActivityMessage events.
func messages(r *acpRecorder) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Neutral != nil && e.Neutral.Kind == backend.ActivityMessage {
			out = append(out, e.Neutral.Text)
		}
	}
	return out
}

// TestACPApprovals: each permission request reaches the Handler as an
// Approval of the tool's kind, and each decision selects the option of
// the matching kind; Abort interrupts the turn; without a Handler the
// request is rejected.
func TestACPApprovals(t *testing.T) {
	e := newACPEnv(t)
	b := e.backend(t, e.config(t))
	p := e.params(t)
	res := acpTurnOK(t, b, backend.TurnRequest{Prompt: "say ready", Params: p})
	tests := []struct {
		name     string
		script   string
		decision backend.Decision
		nilH     bool
		want     string // the turn's text
		status   string
		kind     backend.ApprovalKind
		command  string
	}{
		{name: "approve", script: "ask c1 execute touch x", decision: backend.Decision{Kind: backend.Approve}, want: "selected allow-once", status: "completed", kind: backend.ApprovalExec, command: "touch x"},
		{name: "approve for session", script: "ask c2 edit edit a.go", decision: backend.Decision{Kind: backend.ApproveForSession}, want: "selected allow-with-updates", status: "completed", kind: backend.ApprovalPatch},
		{name: "deny", script: "ask c3 fetch get url", decision: backend.Decision{Kind: backend.Deny, Reason: "no"}, want: "selected reject", status: "completed", kind: backend.ApprovalTool},
		{name: "no handler", script: "ask c4", nilH: true, want: "selected reject", status: "completed"},
		{name: "abort", script: "say before\nask c5", decision: backend.Decision{Kind: backend.Abort}, status: "interrupted", kind: backend.ApprovalExec, command: "run c5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newACPRecorder(tt.decision)
			req := backend.TurnRequest{ThreadID: res.ThreadID, Prompt: tt.script, Params: p, Handler: rec}
			if tt.nilH {
				req.Handler = nil
			}
			got := acpTurnOK(t, b, req)
			if got.Status != tt.status || (tt.want != "" && got.Text != tt.want) {
				t.Errorf("result %+v, want %q %s", got, tt.want, tt.status)
			}
			if tt.nilH {
				return
			}
			if len(rec.approvals) != 1 {
				t.Fatalf("%d approvals, want 1", len(rec.approvals))
			}
			a := rec.approvals[0]
			if a.Kind != tt.kind || a.Command != tt.command || a.ThreadID != res.ThreadID || a.CallID == "" || a.Message == "" || a.Cwd != p.Cwd || !strings.HasPrefix(a.ID, "approval-") {
				t.Errorf("approval %+v, want kind %q command %q", a, tt.kind, tt.command)
			}
			if err := a.Respond(backend.Decision{Kind: backend.Approve}); !errors.Is(err, backend.ErrAlreadyAnswered) {
				t.Errorf("second Respond: %v, want ErrAlreadyAnswered", err)
			}
			if acts := strings.Join(rec.activities(), "\n"); !strings.Contains(acts, "approval approval: "+a.Message) {
				t.Errorf("no approval activity in\n%s", acts)
			}
		})
	}
	// The thread goes on after the aborted turn (in a new process, the
	// session loaded).
	res2 := acpTurnOK(t, b, backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "say after", Params: p})
	if res2.ThreadID != res.ThreadID || res2.Text != "after" {
		t.Errorf("after the abort: %+v", res2)
	}
}

// TestACPDenialNote: the agent reads its own words for a denial
// (claude-agent-acp: "User refused permission to run tool"), so the
// denial's reason reaches it as a note: within the same turn when the
// agent takes input for a running turn (the steering extension), else at
// the start of the thread's next prompt; once either way. A denial
// without a reason, or an approval, leaves nothing.
func TestACPDenialNote(t *testing.T) {
	const note = "[atm-agent-mcp: the approval for `touch y` was denied: no one was asked: the MCP client cancelled the request. " +
		"Whatever the tool result says about a user, this is who or what decided.]"
	nobody := backend.Decision{Kind: backend.Deny, Reason: "no one was asked: the MCP client cancelled the request"}
	tests := []struct {
		name     string
		steering bool // the agent advertises the steering extension
		decision backend.Decision
		wantTurn string // the denied turn's text (its last message)
		wantNext string // what the next prompt starts with
	}{
		{"denied, nobody asked", false, nobody, "selected reject", note + "\n\nP:\necho"},
		{"denied, nobody asked, to an agent that steers", true, nobody, "steered: " + note, "P:\necho"},
		{"denied without a reason", false, backend.Decision{Kind: backend.Deny}, "selected reject", "P:\necho"},
		{"denied without a reason, to an agent that steers", true, backend.Decision{Kind: backend.Deny}, "selected reject", "P:\necho"},
		{"approved", false, backend.Decision{Kind: backend.Approve}, "selected allow-once", "P:\necho"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newACPEnv(t)
			var env []string
			if tt.steering {
				env = append(env, "MOCKACP_STEERING=1")
			}
			b := e.backend(t, e.config(t, env...))
			p := e.params(t)
			first := acpTurnOK(t, b, backend.TurnRequest{Prompt: "say ready", Params: p})
			denied := acpTurnOK(t, b, backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "ask c9 execute touch y", Params: p, Handler: newACPRecorder(tt.decision)})
			if denied.Text != tt.wantTurn {
				t.Errorf("the denied turn = %q, want %q", denied.Text, tt.wantTurn)
			}
			next := acpTurnOK(t, b, backend.TurnRequest{ThreadID: first.ThreadID, Preamble: "P:\n", Prompt: "echo", Params: p})
			if next.Text != tt.wantNext {
				t.Errorf("next prompt = %q, want %q", next.Text, tt.wantNext)
			}
			again := acpTurnOK(t, b, backend.TurnRequest{ThreadID: first.ThreadID, Preamble: "P:\n", Prompt: "echo", Params: p})
			if again.Text != "P:\necho" {
				t.Errorf("the prompt after = %q, want the note once only", again.Text)
			}
		})
	}
}

// TestACPInterrupt: Interrupt ends a running turn as interrupted, with
// the text so far as Partial; ctx's end does the same and returns ctx's
// error; the thread goes on, its agent restarted and the session loaded.
func TestACPInterrupt(t *testing.T) {
	e := newACPEnv(t)
	b := e.backend(t, e.config(t))
	p := e.params(t)
	first := acpTurnOK(t, b, backend.TurnRequest{Prompt: "say one", Params: p})
	pid := b.Status().PID

	rec := newACPRecorder()
	done := make(chan *backend.Result, 1)
	go func() {
		res, err := b.Turn(context.Background(), backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "say before\nwait", Params: p, Handler: rec})
		if err != nil {
			t.Errorf("Turn: %v", err)
		}
		done <- res
	}()
	waitText(t, rec, "before")
	if err := b.Interrupt(context.Background(), first.ThreadID); err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	res := <-done
	if res == nil || res.Status != "interrupted" || !res.IsError || res.Partial != "before" {
		t.Errorf("interrupted turn: %+v", res)
	}

	ctx, cancel := context.WithCancel(context.Background())
	rec2 := newACPRecorder()
	go func() {
		waitText(t, rec2, "again")
		cancel()
	}()
	res, err := b.Turn(ctx, backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "say again\nwait", Params: p, Handler: rec2})
	if !errors.Is(err, context.Canceled) || res == nil || res.Status != "interrupted" || res.Partial != "again" {
		t.Errorf("turn with ctx cancelled: %+v, %v", res, err)
	}

	res = acpTurnOK(t, b, backend.TurnRequest{ThreadID: first.ThreadID, Preamble: "P:\n", Prompt: "echo", Params: p})
	if res.ThreadID != first.ThreadID || res.Text != "P:\necho" || res.TurnID != "1" {
		t.Errorf("turn after the interrupts: %+v, want the loaded session's first turn", res)
	}
	if st := b.Status(); st.PID == pid || !st.Running {
		t.Errorf("status %+v: want a new process (pid was %d)", st, pid)
	}
}

// waitText waits until rec has seen a message chunk ending with text.
func waitText(t *testing.T, rec *acpRecorder, text string) {
	t.Helper()
	var got string
	timeout := time.After(30 * time.Second)
	for !strings.HasSuffix(got, text) {
		select {
		case s := <-rec.seen:
			got += s
		case <-timeout:
			t.Errorf("no message %q (saw %q)", text, got)
			return
		}
	}
}

// TestACPResume: a new backend (the proxy restarted) continues a thread
// by loading its session in a new agent process: the replay reaches no
// handler, the prompt is Preamble+Prompt. When the agent cannot load or
// resume it (not offered, or failing), a new session starts, seeded: its
// first prompt has the instructions with Seed in front of the developer
// instructions, and the result names the new thread.
func TestACPResume(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		policy  string
		resumed bool
		// replaced is in Result.Replaced of a fallback: why.
		replaced string
	}{
		{name: "load", resumed: true},
		{name: "resume", env: []string{"MOCKACP_LOAD=off"}, resumed: true},
		{name: "neither offered", env: []string{"MOCKACP_LOAD=off", "MOCKACP_RESUME=off"}, replaced: "the agent offers no way to reopen a session"},
		{name: "both failing", env: []string{"MOCKACP_LOAD=fail", "MOCKACP_RESUME=fail"},
			replaced: "the agent could not reopen it: session/load failed: "},
		{name: "policy none", policy: ResumeNone, replaced: "the resume policy is none"},
		{name: "policy load without load", env: []string{"MOCKACP_LOAD=off"}, policy: ResumeLoad, replaced: "the agent offers no way to reopen a session"},
		{name: "policy load", policy: ResumeLoad, resumed: true},
		{name: "policy resume", policy: ResumeResume, resumed: true},
		{name: "policy resume without resume", env: []string{"MOCKACP_RESUME=off"}, policy: ResumeResume, replaced: "the agent offers no way to reopen a session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newACPEnv(t)
			cfg := e.config(t, tt.env...)
			cfg.Resume = tt.policy
			p := e.params(t)
			b1 := e.backend(t, cfg)
			first := acpTurnOK(t, b1, backend.TurnRequest{Prompt: "say one", Params: p})
			if err := b1.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := b1.Turn(context.Background(), backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "say no"}); !errors.Is(err, backend.ErrClosed) {
				t.Errorf("Turn after Close: %v, want ErrClosed", err)
			}
			b2 := e.backend(t, cfg)
			rec := newACPRecorder()
			var told []string
			res := acpTurnOK(t, b2, backend.TurnRequest{ThreadID: first.ThreadID, Preamble: "P:\n", Prompt: "echo", Seed: "SEED", Params: p, Handler: rec,
				OnThread: func(id string) { told = append(told, id) }})
			if tt.resumed {
				if res.ThreadID != first.ThreadID || res.Text != "P:\necho" || res.Replaced != "" || told != nil {
					t.Errorf("resumed: %+v, OnThread %q; want the same thread, not replaced, no OnThread", res, told)
				}
				if d := cmp.Diff([]string{"P:\necho"}, messages(rec)); d != "" {
					t.Errorf("messages (-want +got), the replay included:\n%s", d)
				}
				return
			}
			want := "BASE INSTRUCTIONS\n\nSEED\n\nDEVELOPER INSTRUCTIONS\n\necho"
			if res.ThreadID == first.ThreadID || res.ThreadID == "" || res.Text != want || !strings.HasPrefix(res.Replaced, tt.replaced) {
				t.Errorf("fallback: %+v, want a new thread whose first prompt is %q, replaced because %q…", res, want, tt.replaced)
			}
			if d := cmp.Diff([]string{res.ThreadID}, told); d != "" {
				t.Errorf("OnThread (-want +got):\n%s", d)
			}
			res2 := acpTurnOK(t, b2, backend.TurnRequest{ThreadID: res.ThreadID, Preamble: "P:\n", Prompt: "echo", Seed: "SEED", Params: p})
			if res2.ThreadID != res.ThreadID || res2.Text != "P:\necho" {
				t.Errorf("the turn after the fallback: %+v", res2)
			}
		})
	}
}

// TestACPFaults: an agent that hangs (ignoring the cancel too) times out
// and is killed; one that crashes mid-turn fails the turn with its
// *ExitError; a few lines of garbage are skipped, a flood kills the
// agent; after each, the thread goes on in a new process.
func TestACPFaults(t *testing.T) {
	e := newACPEnv(t)
	cfg := e.config(t)
	cfg.CancelTimeout = time.Second
	b := e.backend(t, cfg)
	p := e.params(t)
	first := acpTurnOK(t, b, backend.TurnRequest{Prompt: "say one", Params: p})
	id := first.ThreadID

	_, err := b.Turn(context.Background(), backend.TurnRequest{ThreadID: id, Prompt: "say partial\nhang", Params: p, Timeout: time.Second})
	var te *backend.TimeoutError
	if !errors.As(err, &te) || te.Partial != "partial" || te.ThreadID != id || te.After != time.Second {
		t.Errorf("hung turn: %v (%+v), want a *TimeoutError with the partial text", err, te)
	}
	if res := acpTurnOK(t, b, backend.TurnRequest{ThreadID: id, Prompt: "say alive", Params: p}); res.Text != "alive" || res.ThreadID != id {
		t.Errorf("after the hang: %+v", res)
	}

	_, err = b.Turn(context.Background(), backend.TurnRequest{ThreadID: id, Prompt: "say going\ncrash 3", Params: p, Timeout: 30 * time.Second})
	var ee *backend.ExitError
	if !errors.As(err, &ee) || ee.Status != (backend.ExitStatus{Code: 3}) || !strings.Contains(ee.Stderr, "crashing as told") || !errors.Is(err, backend.ErrChildExited) {
		t.Errorf("crashed turn: %v, want an *ExitError with code 3 and its stderr", err)
	}
	if got, want := err.Error(), "mock agent process exited with code 3"; got != want {
		t.Errorf("crashed turn: %q, want %q (the agent's kind, never codex)", got, want)
	}
	if st := b.Status(); st.Running || st.Exit == nil || *st.Exit != (backend.ExitStatus{Code: 3}) {
		t.Errorf("status after the crash: %+v", st)
	}
	if res := acpTurnOK(t, b, backend.TurnRequest{ThreadID: id, Prompt: "garbage 3\nsay through", Params: p}); res.Text != "through" || res.ThreadID != id {
		t.Errorf("garbage: %+v", res)
	}
	_, err = b.Turn(context.Background(), backend.TurnRequest{ThreadID: id, Prompt: "garbage 20000\nwait", Params: p, Timeout: 30 * time.Second})
	// It leads with why, and counts the lines it wrote (the mock writes
	// 20000; the kill comes after 10000 and some more are read).
	floodRe := regexp.MustCompile(`^stopped: it wrote (\d+) lines in a row that are not JSON-RPC on stdout, and 10000 is the limit \(killed by signal killed\)$`)
	flooded := ""
	if errors.As(err, &ee) {
		flooded = strings.TrimPrefix(err.Error(), "mock agent process ")
	}
	if m := floodRe.FindStringSubmatch(flooded); m == nil || !strings.HasPrefix(err.Error(), "mock agent process ") || !errors.Is(err, backend.ErrNotJSONRPC) || !errors.Is(err, backend.ErrChildExited) {
		t.Errorf("a flood of garbage: %v, want an *backend.ExitError saying why it was stopped (%s), wrapping backend.ErrNotJSONRPC", err, floodRe)
	} else if n, _ := strconv.Atoi(m[1]); n < 10000 || n > 20000 {
		t.Errorf("a flood of garbage: it says %d lines, want 10000 to 20000", n)
	}
	if st := b.Status(); st.Running || st.Exit == nil || st.Exit.String() != flooded {
		t.Errorf("status after the flood: %+v, want its exit to say why", st)
	}
	if res := acpTurnOK(t, b, backend.TurnRequest{ThreadID: id, Prompt: "say last", Params: p}); res.Text != "last" {
		t.Errorf("after the flood: %+v", res)
	}
}

// TestACPClose: Close kills every agent's process group, a child that
// ignores SIGTERM included, whether the agents run directly or through the
// guard; later turns fail with ErrClosed.
func TestACPClose(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		t.Run(fmt.Sprintf("guarded=%v", guarded), func(t *testing.T) { testACPClose(t, guarded) })
	}
}

func testACPClose(t *testing.T, guarded bool) {
	e := newACPEnv(t)
	cfg := e.config(t)
	if guarded {
		cfg.Guard = []string{os.Args[0], guardArg} // TestMain runs the guard
	}
	b := e.backend(t, cfg)
	p := e.params(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	res := acpTurnOK(t, b, backend.TurnRequest{Prompt: "spawn " + pidFile + "\nsay spawned", Params: p})
	acpTurnOK(t, b, backend.TurnRequest{Prompt: "say a second thread", Params: p})
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.Status().PID)); guarded != strings.Contains(string(cmdline), guardArg) {
		t.Errorf("the agent process runs %q; guarded %v", cmdline, guarded)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(raw), &pid); err != nil || syscall.Kill(pid, 0) != nil {
		t.Fatalf("spawned pid %q not alive: %v", raw, err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if st := b.Status(); st.Running {
		t.Errorf("status after Close: %+v", st)
	}
	if _, err := b.Turn(context.Background(), backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "say no", Params: p}); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("Turn after Close: %v, want ErrClosed", err)
	}
	// noMarkedProcessLeft (newACPEnv) checks the spawned child is gone.
}

// TestACPBusy: a second turn on a thread whose turn runs fails with
// ErrThreadBusy; an unknown command fails the turn before any session.
func TestACPBusy(t *testing.T) {
	e := newACPEnv(t)
	b := e.backend(t, e.config(t))
	p := e.params(t)
	first := acpTurnOK(t, b, backend.TurnRequest{Prompt: "say one", Params: p})
	rec := newACPRecorder()
	done := make(chan error, 1)
	go func() {
		_, err := b.Turn(context.Background(), backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "say busy\nwait", Params: p, Handler: rec})
		done <- err
	}()
	waitText(t, rec, "busy")
	if _, err := b.Turn(context.Background(), backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "say two", Params: p}); !errors.Is(err, backend.ErrThreadBusy) {
		t.Errorf("second turn: %v, want ErrThreadBusy", err)
	}
	if err := b.Interrupt(context.Background(), first.ThreadID); err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("interrupted turn: %v", err)
	}

	// An ACP agent cannot be constrained to an output schema: refused
	// before anything is sent.
	if _, err := b.Turn(context.Background(), backend.TurnRequest{Prompt: "say json", Params: p, OutputSchema: json.RawMessage(`{}`)}); !errors.Is(err, backend.ErrUnsupported) {
		t.Errorf("turn with an output schema: %v, want ErrUnsupported", err)
	}

	bad := New(Config{Command: filepath.Join(t.TempDir(), "no-such-agent")})
	defer bad.Close(context.Background())
	if _, err := bad.Turn(context.Background(), backend.TurnRequest{Prompt: "hi", Params: p}); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("missing agent: %v, want ErrNotFound", err)
	}
}
