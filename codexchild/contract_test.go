package codexchild

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestContract runs the same suite against mockcodex and the real Codex
// 0.153.4 (skipped loudly when ATM_CODEX_MCP_BIN is not set, failed when
// ATM_REQUIRE_REAL_CODEX=1).
func TestContract(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			for _, c := range contractCases {
				t.Run(c.name, func(t *testing.T) {
					cfg, cwd := tg.setup(t)
					b := newBackend(t, cfg)
					c.run(t, b, cwd)
				})
			}
		})
	}
}

var contractCases = []struct {
	name string
	run  func(t *testing.T, b *MCPServer, cwd string)
}{
	{"handshake", contractHandshake},
	{"turn_and_reply", contractTurnAndReply},
	{"approval_approved", contractApprovalApproved},
	{"approval_denied", contractApprovalDenied},
	{"approval_abort", contractApprovalAbort},
	{"patch_approval", contractPatchApproval},
	{"interrupt_then_new_thread", contractInterrupt},
	{"timeout", contractTimeout},
	{"unknown_thread", contractUnknownThread},
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func contractHandshake(t *testing.T, b *MCPServer, cwd string) {
	if s := b.Status(); s.Started {
		t.Fatalf("Status before first use = %+v, want not started (lazy start)", s)
	}
	tools, err := b.Tools(ctxFor(t, 60*time.Second))
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(tools, &list); err != nil {
		t.Fatalf("tools/list result %s: %v", tools, err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"codex", "codex-reply"}, names); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	s := b.Status()
	if !s.Started || !s.Running || s.PID == 0 || s.Exit != nil {
		t.Errorf("Status = %+v, want started and running", s)
	}
	if !strings.HasPrefix(s.Version, "0.153.") {
		t.Errorf("Version = %q, want 0.153.x", s.Version)
	}
	// Forward of ping is answered by the child with the caller's id; the
	// lists Codex never answers are answered by the backend.
	for _, tc := range []struct{ method, want string }{
		{"ping", `{}`},
		{"resources/list", `{"resources":[]}`},
		{"prompts/list", `{"prompts":[]}`},
	} {
		req := mustRequest(t, `{"jsonrpc":"2.0","id":"up-7","method":"`+tc.method+`"}`)
		resp, err := b.Forward(ctxFor(t, 10*time.Second), req)
		if err != nil {
			t.Fatalf("Forward %s: %v", tc.method, err)
		}
		if resp.ID != req.ID || string(resp.Result) != tc.want {
			t.Errorf("Forward %s = id %s result %s, want id %s result %s", tc.method, resp.ID, resp.Result, req.ID, tc.want)
		}
	}
	// An unknown method gets the child's JSON-RPC error, verbatim.
	resp, err := b.Forward(ctxFor(t, 10*time.Second), mustRequest(t, `{"jsonrpc":"2.0","id":3,"method":"no/such"}`))
	if err != nil {
		t.Fatalf("Forward no/such: %v", err)
	}
	if e := resp.Err(); e == nil || e.Code != -32601 {
		t.Errorf("Forward no/such = %s, want error -32601", resp.Error)
	}
}

func contractTurnAndReply(t *testing.T, b *MCPServer, cwd string) {
	rec := newRecorder(nil)
	res, err := b.Turn(ctxFor(t, 60*time.Second), TurnRequest{Prompt: "hello contract", Params: ThreadParams{Cwd: cwd}, Handler: rec})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if res.Text != "MOCK_REPLY: hello contract" || res.IsError || res.Status != "completed" || res.ThreadID == "" {
		t.Fatalf("Turn = %+v, want MOCK_REPLY text, completed, a thread id", res)
	}
	events, _ := rec.snapshot()
	types := rec.types()
	for _, want := range []string{"task_started", "agent_message", "task_complete"} {
		if !contains(types, want) {
			t.Errorf("events %v lack %s", types, want)
		}
	}
	for _, e := range events {
		if e.ThreadID != res.ThreadID || e.Method != "codex/event" {
			t.Errorf("event %s: thread %q method %q, want thread %q codex/event", e.Type, e.ThreadID, e.Method, res.ThreadID)
		}
	}

	rec2 := newRecorder(nil)
	res2, err := b.Turn(ctxFor(t, 60*time.Second), TurnRequest{ThreadID: res.ThreadID, Prompt: "second turn", Handler: rec2})
	if err != nil {
		t.Fatalf("reply Turn: %v", err)
	}
	want := &Result{ThreadID: res.ThreadID, Text: "MOCK_REPLY: second turn", Status: "completed"}
	if diff := cmp.Diff(want, res2, cmpResult); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
	if !contains(rec2.types(), "task_complete") {
		t.Errorf("reply events %v lack task_complete", rec2.types())
	}
}

// cmpResult compares the stable fields of a Result.
var cmpResult = cmp.FilterPath(func(p cmp.Path) bool {
	f := p.Last().String()
	return f == ".Raw" || f == ".TurnID"
}, cmp.Ignore())

func approvalTurn(t *testing.T, b *MCPServer, cwd string, d Decision) (*Result, *recorder, error) {
	rec := newRecorder(func(*Approval) Decision { return d })
	res, err := b.Turn(ctxFor(t, 60*time.Second), TurnRequest{
		Prompt:  "RUN_SHELL ESCALATE please",
		Params:  ThreadParams{Cwd: cwd, ApprovalPolicy: "on-request", Sandbox: "workspace-write"},
		Handler: rec,
	})
	return res, rec, err
}

func checkExecApproval(t *testing.T, rec *recorder, res *Result, cwd string) {
	t.Helper()
	_, apps := rec.snapshot()
	if len(apps) != 1 {
		t.Fatalf("got %d approvals, want 1", len(apps))
	}
	a := apps[0]
	if a.Kind != ApprovalExec || !strings.Contains(a.Command, "touch mock_shell_probe.txt") || a.Cwd == "" || a.CallID == "" || a.ID == "" {
		t.Errorf("approval = %+v, want an exec approval of touch mock_shell_probe.txt", a)
	}
	if res != nil && a.ThreadID != res.ThreadID {
		t.Errorf("approval thread %q, result thread %q", a.ThreadID, res.ThreadID)
	}
	if a.Reason == "" {
		t.Errorf("approval has no reason (from the exec_approval_request event)")
	}
	if err := a.Respond(Decision{Kind: Approve}); !errors.Is(err, ErrAlreadyAnswered) {
		t.Errorf("second Respond = %v, want ErrAlreadyAnswered", err)
	}
}

func contractApprovalApproved(t *testing.T, b *MCPServer, cwd string) {
	res, rec, err := approvalTurn(t, b, cwd, Decision{Kind: Approve})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if !strings.HasPrefix(res.Text, "MOCK_DONE: tool output was:") || res.IsError {
		t.Errorf("Turn = %+v, want MOCK_DONE: tool output was: ...", res)
	}
	checkExecApproval(t, rec, res, cwd)
}

func contractApprovalDenied(t *testing.T, b *MCPServer, cwd string) {
	res, rec, err := approvalTurn(t, b, cwd, Decision{Kind: Deny, Reason: "contract says no"})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if res.IsError || res.Status != "completed" || !strings.Contains(res.Text, "contract says no") {
		t.Errorf("Turn = %+v, want a completed turn whose tool output carries the rejection", res)
	}
	checkExecApproval(t, rec, res, cwd)
}

func contractApprovalAbort(t *testing.T, b *MCPServer, cwd string) {
	start := time.Now()
	res, rec, err := approvalTurn(t, b, cwd, Decision{Kind: Abort})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if !res.IsError || res.Status != "interrupted" || res.ThreadID == "" {
		t.Errorf("Turn = %+v, want an interrupted IsError result made by the backend", res)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("aborted turn took %s", d)
	}
	checkExecApproval(t, rec, nil, cwd)
	// The child is still usable.
	res2, err := b.Turn(ctxFor(t, 60*time.Second), TurnRequest{Prompt: "after abort", Params: ThreadParams{Cwd: cwd}})
	if err != nil || res2.Text != "MOCK_REPLY: after abort" {
		t.Fatalf("Turn after abort = %+v, %v", res2, err)
	}
}

func contractInterrupt(t *testing.T, b *MCPServer, cwd string) {
	rec := newRecorder(nil)
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := b.Turn(ctxFor(t, 90*time.Second), TurnRequest{Prompt: "SLOW=30 take your time", Params: ThreadParams{Cwd: cwd}, Handler: rec})
		done <- out{res, err}
	}()
	rec.waitType(t, "task_started", 30*time.Second)
	events, _ := rec.snapshot()
	thread := events[len(events)-1].ThreadID
	if thread == "" {
		t.Fatal("task_started has no thread id")
	}
	start := time.Now()
	if err := b.Interrupt(ctxFor(t, 5*time.Second), thread); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	var o out
	select {
	case o = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Turn did not return within 5s of Interrupt")
	}
	if o.err != nil {
		t.Fatalf("Turn: %v", o.err)
	}
	if !o.res.IsError || o.res.Status != "interrupted" || o.res.ThreadID != thread {
		t.Errorf("interrupted Turn = %+v", o.res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Turn returned %s after Interrupt, want promptly", d)
	}
	if err := b.Interrupt(ctxFor(t, 5*time.Second), thread); err != nil {
		t.Errorf("second Interrupt = %v, want nil (no-op)", err)
	}
	res, err := b.Turn(ctxFor(t, 60*time.Second), TurnRequest{Prompt: "after cancel", Params: ThreadParams{Cwd: cwd}})
	if err != nil {
		t.Fatalf("Turn after interrupt: %v", err)
	}
	if res.Text != "MOCK_REPLY: after cancel" || res.ThreadID == thread {
		t.Errorf("Turn after interrupt = %+v, want MOCK_REPLY on a new thread", res)
	}
}

func contractTimeout(t *testing.T, b *MCPServer, cwd string) {
	if _, err := b.Tools(ctxFor(t, 60*time.Second)); err != nil { // start outside the timed part
		t.Fatal(err)
	}
	start := time.Now()
	res, err := b.Turn(ctxFor(t, 60*time.Second), TurnRequest{Prompt: "SLOW=30 EVENTS=3 slow one", Params: ThreadParams{Cwd: cwd}, Timeout: 2 * time.Second})
	elapsed := time.Since(start)
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("Turn = %+v, %v; want a *TimeoutError", res, err)
	}
	if te.After != 2*time.Second || te.ThreadID == "" {
		t.Errorf("TimeoutError = %+v", te)
	}
	if elapsed < 2*time.Second || elapsed > 4*time.Second {
		t.Errorf("Turn returned after %s, want about 2s", elapsed)
	}
	// The child is still usable.
	res, err = b.Turn(ctxFor(t, 60*time.Second), TurnRequest{Prompt: "after timeout", Params: ThreadParams{Cwd: cwd}})
	if err != nil || res.Text != "MOCK_REPLY: after timeout" {
		t.Fatalf("Turn after timeout = %+v, %v", res, err)
	}
}

func contractUnknownThread(t *testing.T, b *MCPServer, cwd string) {
	const id = "01a1ffa3-0000-7000-8000-000000000000"
	res, err := b.Turn(ctxFor(t, 60*time.Second), TurnRequest{ThreadID: id, Prompt: "anyone there?"})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if !res.IsError || res.Status != "failed" || !strings.Contains(res.Text, "Session not found") || res.ThreadID != id {
		t.Errorf("Turn = %+v, want an IsError result mentioning Session not found", res)
	}
}

func contractPatchApproval(t *testing.T, b *MCPServer, cwd string) {
	path := filepath.Join(cwd, "patched.txt")
	rec := newRecorder(func(*Approval) Decision { return Decision{Kind: Approve} })
	res, err := b.Turn(ctxFor(t, 60*time.Second), TurnRequest{
		Prompt:  "PATCH=" + path,
		Params:  ThreadParams{Cwd: cwd, ApprovalPolicy: "on-request", Sandbox: "read-only"},
		Handler: rec,
	})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if res.IsError || !strings.HasPrefix(res.Text, "MOCK_DONE: tool output was:") {
		t.Errorf("Turn = %+v, want a completed turn after the patch", res)
	}
	_, apps := rec.snapshot()
	if len(apps) != 1 || apps[0].Kind != ApprovalPatch || !strings.Contains(string(apps[0].Changes), path) || apps[0].ThreadID != res.ThreadID {
		t.Fatalf("approvals = %+v, want one patch approval of %s", apps, path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("approved patch not applied: %v", err)
	}
}
