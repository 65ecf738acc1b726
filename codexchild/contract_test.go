package codexchild

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestContract runs the same suite against mockcodex and the real Codex,
// for both protocols: mcp-server (mockcodex, real 0.153.4 from
// ATM_CODEX_MCP_BIN) and app-server (mockcodex and the real Codex as the
// pinned TestedAppServerCodex, from ATM_CODEX_APP_BIN). A missing real binary is skipped loudly, or fails when
// ATM_REQUIRE_REAL_CODEX=1. Where the protocols differ on purpose (event
// names, what a denial tells the model, resume) the case asks the target's
// expect.
func TestContract(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			for _, c := range contractCases {
				t.Run(c.name, func(t *testing.T) {
					cfg, cwd := tg.setup(t)
					b := newTestBackend(t, cfg)
					if kindOf(b) != tg.kind {
						t.Fatalf("Kind() = %s, want %s", kindOf(b), tg.kind)
					}
					c.run(t, b, &contractEnv{target: tg, cfg: cfg, cwd: cwd, expect: expectations[tg.kind]})
				})
			}
		})
	}
}

// contractEnv is what a contract case knows about its target.
type contractEnv struct {
	target
	cfg    Config // makes more backends on the same Codex storage
	cwd    string
	expect expect
}

// expect holds what differs between the protocols by design.
type expect struct {
	started, message, complete string // event types
	eventMethod                string // "" means Event.Method == Event.Type
	unknownThread              string // in the IsError text of an unknown thread
	// denialReason: the Deny reason reaches the model as the rejection
	// (mcp-server); the app-server tells it "rejected by user", and the
	// backend steers the turn with the reason.
	denialReason bool
	canResume    bool
}

var expectations = map[Kind]expect{
	KindMCPServer: {started: "task_started", message: "agent_message", complete: "task_complete", eventMethod: "codex/event",
		unknownThread: "Session not found", denialReason: true},
	KindAppServer: {started: "turn/started", message: "item/completed", complete: "turn/completed",
		unknownThread: "thread not found", canResume: true},
}

var contractCases = []struct {
	name string
	run  func(t *testing.T, b backend.Backend, e *contractEnv)
}{
	{"handshake", contractHandshake},
	{"turn_and_reply", contractTurnAndReply},
	{"events_flushed", contractEventsFlushed},
	{"resume_in_new_process", contractResume},
	{"approval_approved", contractApprovalApproved},
	{"approval_denied", contractApprovalDenied},
	{"approval_abort", contractApprovalAbort},
	{"patch_approval", contractPatchApproval},
	{"interrupt_then_new_thread", contractInterrupt},
	{"timeout", contractTimeout},
	{"unknown_thread", contractUnknownThread},
	{"model_error", contractModelError},
	{"steer", contractSteer},
	{"fork", contractFork},
	{"structured_output", contractStructuredOutput},
	{"sub_agents", contractSubAgents},
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// warmUp starts the child outside a timed part of a case.
func warmUp(t *testing.T, b backend.Backend, e *contractEnv) {
	t.Helper()
	if e.kind == KindMCPServer {
		if _, err := toolsOf(t, b).Tools(ctxFor(t, 60*time.Second)); err != nil {
			t.Fatal(err)
		}
		return
	}
	if res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "warm up", Params: backend.ThreadParams{Cwd: e.cwd}}); err != nil || res.IsError {
		t.Fatalf("warm-up Turn = %+v, %v", res, err)
	}
}

func contractHandshake(t *testing.T, b backend.Backend, e *contractEnv) {
	if s := b.Status(); s.Started {
		t.Fatalf("Status before first use = %+v, want not started (lazy start)", s)
	}
	wantVersion := TestedMCPServerCodex
	if e.kind == KindAppServer {
		wantVersion = TestedAppServerCodex
		// The app-server is no MCP server: the MCP pass-through is refused
		// without starting anything.
		if _, ok := b.(Passthrough); ok {
			t.Errorf("%T is a Passthrough; app-server is no MCP server", b)
		}
		if s := b.Status(); s.Started || Kind(s.Protocol) != KindAppServer {
			t.Errorf("Status = %+v, want app-server, not started", s)
		}
		warmUp(t, b, e)
	}
	checkStatus := func() {
		t.Helper()
		s := b.Status()
		if !s.Started || !s.Running || s.PID == 0 || s.Exit != nil {
			t.Errorf("Status = %+v, want started and running", s)
		}
		if s.Version != wantVersion {
			t.Errorf("Version = %q, want the tested %s", s.Version, wantVersion)
		}
	}
	if e.kind == KindAppServer {
		checkStatus()
		return
	}
	tools, err := toolsOf(t, b).Tools(ctxFor(t, 60*time.Second))
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
	checkStatus()
	// Forward of ping is answered by the child with the caller's id; the
	// lists Codex never answers are answered by the backend.
	for _, tc := range []struct{ method, want string }{
		{"ping", `{}`},
		{"resources/list", `{"resources":[]}`},
		{"prompts/list", `{"prompts":[]}`},
	} {
		req := mustRequest(t, `{"jsonrpc":"2.0","id":"up-7","method":"`+tc.method+`"}`)
		resp, err := passOf(t, b).Forward(ctxFor(t, 10*time.Second), req)
		if err != nil {
			t.Fatalf("Forward %s: %v", tc.method, err)
		}
		if resp.ID != req.ID || string(resp.Result) != tc.want {
			t.Errorf("Forward %s = id %s result %s, want id %s result %s", tc.method, resp.ID, resp.Result, req.ID, tc.want)
		}
	}
	// An unknown method gets the child's JSON-RPC error, verbatim.
	resp, err := passOf(t, b).Forward(ctxFor(t, 10*time.Second), mustRequest(t, `{"jsonrpc":"2.0","id":3,"method":"no/such"}`))
	if err != nil {
		t.Fatalf("Forward no/such: %v", err)
	}
	if e := resp.Err(); e == nil || e.Code != -32601 {
		t.Errorf("Forward no/such = %s, want error -32601", resp.Error)
	}
}

// checkEvents checks that a turn's handler saw the protocol's start,
// message and completion events, all of the turn's thread.
func checkEvents(t *testing.T, rec *recorder, e *contractEnv, threadID string) {
	t.Helper()
	events, _ := rec.snapshot()
	types := rec.types()
	for _, want := range []string{e.expect.started, e.expect.message, e.expect.complete} {
		if !contains(types, want) {
			t.Errorf("events %v lack %s", types, want)
		}
	}
	method := e.expect.eventMethod
	for _, ev := range events {
		want := method
		if want == "" {
			want = ev.Type
		}
		if ev.ThreadID != threadID || ev.Method != want || len(ev.Params) == 0 {
			t.Errorf("event %s: thread %q method %q, want thread %q method %q and params", ev.Type, ev.ThreadID, ev.Method, threadID, want)
		}
	}
}

func contractTurnAndReply(t *testing.T, b backend.Backend, e *contractEnv) {
	rec := newRecorder(nil)
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "hello contract", Params: backend.ThreadParams{Cwd: e.cwd}, Handler: rec})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if res.Text != "MOCK_REPLY: hello contract" || res.IsError || res.Status != "completed" || res.ThreadID == "" {
		t.Fatalf("Turn = %+v, want MOCK_REPLY text, completed, a thread id", res)
	}
	checkEvents(t, rec, e, res.ThreadID)
	checkModel(t, rec, "mock-model")

	rec2 := newRecorder(nil)
	res2, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "second turn", Handler: rec2})
	if err != nil {
		t.Fatalf("reply Turn: %v", err)
	}
	want := &backend.Result{ThreadID: res.ThreadID, Text: "MOCK_REPLY: second turn", Status: "completed"}
	if diff := cmp.Diff(want, res2, cmpResult); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
	checkEvents(t, rec2, e, res.ThreadID)
}

// flushRecorder is a recorder that is also a Flusher; log has an 'E' for
// every event and an 'F' for every Flush, in order.
type flushRecorder struct {
	*recorder
	lmu sync.Mutex
	log []byte
}

func (f *flushRecorder) Event(e backend.Event) {
	f.recorder.Event(e)
	f.lmu.Lock()
	f.log = append(f.log, 'E')
	f.lmu.Unlock()
}

func (f *flushRecorder) Flush() {
	f.lmu.Lock()
	f.log = append(f.log, 'F')
	f.lmu.Unlock()
}

func (f *flushRecorder) logged() string {
	f.lmu.Lock()
	defer f.lmu.Unlock()
	return string(f.log)
}

// contractEventsFlushed: a Handler that is a Flusher gets a Flush after its
// events once the reader has nothing more to read, and none without an event
// since the last one; on a new thread and on a reply.
func contractEventsFlushed(t *testing.T, b backend.Backend, e *contractEnv) {
	thread := ""
	for _, prompt := range []string{"flush one", "flush two"} {
		fr := &flushRecorder{recorder: newRecorder(nil)}
		res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: thread, Prompt: prompt, Params: backend.ThreadParams{Cwd: e.cwd}, Handler: fr})
		if err != nil || res.IsError {
			t.Fatalf("Turn = %+v, %v", res, err)
		}
		thread = res.ThreadID
		// The last Flush may follow the result: the reader flushes when it
		// runs out of output.
		deadline := time.Now().Add(10 * time.Second)
		for !strings.HasSuffix(fr.logged(), "F") && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		log := fr.logged()
		events, _ := fr.snapshot()
		if !strings.HasPrefix(log, "E") || !strings.HasSuffix(log, "F") || strings.Contains(log, "FF") ||
			strings.Count(log, "E") != len(events) || len(events) == 0 {
			t.Errorf("%q: events and flushes %q (%d events), want each run of events followed by one flush", prompt, log, len(events))
		}
	}
}

// contractResume: a thread of a child that has exited is continued by a new
// child: app-server resumes it (thread/resume); mcp-server cannot, and
// continues on a fresh thread seeded with TurnRequest.Seed.
func contractResume(t *testing.T, b backend.Backend, e *contractEnv) {
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "remember me", Params: backend.ThreadParams{Cwd: e.cwd}})
	if err != nil || res.IsError {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if err := b.Close(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	b2 := newTestBackend(t, e.cfg)
	rec := newRecorder(nil)
	res2, err := b2.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "after restart", Params: backend.ThreadParams{Cwd: e.cwd}, Seed: "[seed]", Handler: rec})
	if err != nil {
		t.Fatalf("resumed Turn: %v", err)
	}
	if !e.expect.canResume {
		if res2.IsError || res2.ThreadID == "" || res2.ThreadID == res.ThreadID || res2.Replaced != replacedUnknown {
			t.Errorf("resumed Turn = %+v, want a result on a fresh thread, replaced (mcp-server cannot resume)", res2)
		}
		return
	}
	want := &backend.Result{ThreadID: res.ThreadID, Text: "MOCK_REPLY: after restart", Status: "completed"}
	if diff := cmp.Diff(want, res2, cmpResult); diff != "" {
		t.Errorf("resumed Turn (-want +got):\n%s", diff)
	}
	checkEvents(t, rec, e, res.ThreadID)
	checkModel(t, rec, "mock-model") // as thread/resume answered
	// A thread Codex has no rollout of cannot be resumed: the turn runs on
	// a new thread, seeded, and says why.
	var told []string
	res3, err := b2.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: "01a1ffa3-0000-7000-8000-0000000000aa", Prompt: "x",
		Preamble: "[ctx] ", Seed: "[seed of the old thread]", Params: backend.ThreadParams{Cwd: e.cwd}, OnThread: func(id string) { told = append(told, id) }})
	if err != nil || res3.IsError || res3.Status != "completed" || res3.ThreadID == "" || res3.ThreadID == "01a1ffa3-0000-7000-8000-0000000000aa" ||
		!strings.Contains(res3.Replaced, "no rollout found") || res3.Text != "MOCK_REPLY: x" {
		t.Errorf("resume of an unknown thread = %+v, %v; want a completed turn on a new thread without the preamble, replaced: no rollout found", res3, err)
	}
	if diff := cmp.Diff([]string{res3.ThreadID}, told); diff != "" {
		t.Errorf("OnThread (-want +got):\n%s", diff)
	}
}

// checkModel: one of the turn's events names the model the thread runs
// (Activity.Model: mcp-server's session_configured, app-server's
// turn/started from its thread/start or thread/resume answer), the one
// Codex was configured with.
func checkModel(t *testing.T, rec *recorder, want string) {
	t.Helper()
	evs, _ := rec.snapshot()
	var got []string
	for _, ev := range evs {
		if m := ev.Activity().Model; m != "" {
			got = append(got, ev.Type+" "+m)
		}
	}
	if len(got) != 1 || !strings.HasSuffix(got[0], " "+want) {
		t.Errorf("events naming the model: %q; want one naming %s", got, want)
	}
}

// cmpResult compares the stable fields of a Result.
var cmpResult = cmp.FilterPath(func(p cmp.Path) bool {
	f := p.Last().String()
	return f == ".Raw" || f == ".TurnID"
}, cmp.Ignore())

func approvalTurn(t *testing.T, b backend.Backend, cwd string, d backend.Decision) (*backend.Result, *recorder, error) {
	rec := newRecorder(func(*backend.Approval) backend.Decision { return d })
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{
		Prompt:  "RUN_SHELL ESCALATE please",
		Params:  backend.ThreadParams{Cwd: cwd, Options: Options{ApprovalPolicy: "on-request", Sandbox: "workspace-write"}},
		Handler: rec,
	})
	return res, rec, err
}

func checkExecApproval(t *testing.T, rec *recorder, res *backend.Result) {
	t.Helper()
	_, apps := rec.snapshot()
	if len(apps) != 1 {
		t.Fatalf("got %d approvals, want 1", len(apps))
	}
	a := apps[0]
	if a.Kind != backend.ApprovalExec || a.Command != "touch mock_shell_probe.txt" || a.Cwd == "" || a.CallID == "" || a.ID == "" || a.ThreadID == "" || len(a.Raw) == 0 {
		t.Errorf("approval = %+v, want an exec approval of touch mock_shell_probe.txt", a)
	}
	if res != nil && a.ThreadID != res.ThreadID {
		t.Errorf("approval thread %q, result thread %q", a.ThreadID, res.ThreadID)
	}
	if a.Reason == "" {
		t.Errorf("approval has no reason")
	}
	if err := a.Respond(backend.Decision{Kind: backend.Approve}); !errors.Is(err, backend.ErrAlreadyAnswered) {
		t.Errorf("second Respond = %v, want ErrAlreadyAnswered", err)
	}
}

func contractApprovalApproved(t *testing.T, b backend.Backend, e *contractEnv) {
	res, rec, err := approvalTurn(t, b, e.cwd, backend.Decision{Kind: backend.Approve})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if !strings.HasPrefix(res.Text, "MOCK_DONE: tool output was:") || res.IsError {
		t.Errorf("Turn = %+v, want MOCK_DONE: tool output was: ...", res)
	}
	checkExecApproval(t, rec, res)
	if _, err := os.Stat(filepath.Join(e.cwd, "mock_shell_probe.txt")); err != nil {
		t.Errorf("approved command did not run: %v", err)
	}
}

func contractApprovalDenied(t *testing.T, b backend.Backend, e *contractEnv) {
	res, rec, err := approvalTurn(t, b, e.cwd, backend.Decision{Kind: backend.Deny, Reason: "contract says no"})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	// mcp-server gives the model the reason as the rejection; app-server's
	// decline has none (the model reads "rejected by user"), so the turn
	// is steered with it, and the model's answer is to that note.
	want := "contract says no"
	if res.IsError || res.Status != "completed" || !strings.Contains(res.Text, want) {
		t.Errorf("Turn = %+v, want a completed turn whose model saw %q", res, want)
	}
	if !e.expect.denialReason && !strings.Contains(res.Text, "[atm-agent-mcp: the approval for `touch mock_shell_probe.txt` was denied: contract says no.") {
		t.Errorf("Turn = %+v, want the model's answer to the steered denial note", res)
	}
	checkExecApproval(t, rec, res)
	if _, err := os.Stat(filepath.Join(e.cwd, "mock_shell_probe.txt")); err == nil {
		t.Errorf("denied command ran")
	}
}

func contractApprovalAbort(t *testing.T, b backend.Backend, e *contractEnv) {
	start := time.Now()
	res, rec, err := approvalTurn(t, b, e.cwd, backend.Decision{Kind: backend.Abort})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if !res.IsError || res.Status != "interrupted" || res.ThreadID == "" || !strings.Contains(res.Text, "abort") {
		t.Errorf("Turn = %+v, want an interrupted IsError result saying aborted", res)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("aborted turn took %s", d)
	}
	checkExecApproval(t, rec, nil)
	// The child is still usable.
	res2, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "after abort", Params: backend.ThreadParams{Cwd: e.cwd}})
	if err != nil || res2.Text != "MOCK_REPLY: after abort" {
		t.Fatalf("Turn after abort = %+v, %v", res2, err)
	}
}

func contractInterrupt(t *testing.T, b backend.Backend, e *contractEnv) {
	rec := newRecorder(nil)
	type out struct {
		res *backend.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{Prompt: "SLOW=30 take your time", Params: backend.ThreadParams{Cwd: e.cwd}, Handler: rec})
		done <- out{res, err}
	}()
	rec.waitType(t, e.expect.started, 30*time.Second)
	events, _ := rec.snapshot()
	thread := events[len(events)-1].ThreadID
	if thread == "" {
		t.Fatalf("%s has no thread id", e.expect.started)
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
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "after cancel", Params: backend.ThreadParams{Cwd: e.cwd}})
	if err != nil {
		t.Fatalf("Turn after interrupt: %v", err)
	}
	if res.Text != "MOCK_REPLY: after cancel" || res.ThreadID == thread {
		t.Errorf("Turn after interrupt = %+v, want MOCK_REPLY on a new thread", res)
	}
	if e.kind == KindAppServer {
		// turn/interrupt is clean: the same thread takes the next turn.
		res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: thread, Prompt: "same thread"})
		if err != nil || res.Text != "MOCK_REPLY: same thread" || res.ThreadID != thread {
			t.Errorf("Turn on the interrupted thread = %+v, %v", res, err)
		}
	}
}

func contractTimeout(t *testing.T, b backend.Backend, e *contractEnv) {
	warmUp(t, b, e)
	start := time.Now()
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "SLOW=30 EVENTS=3 slow one", Params: backend.ThreadParams{Cwd: e.cwd}, Timeout: 2 * time.Second})
	elapsed := time.Since(start)
	var te *backend.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, backend.ErrTimeout) {
		t.Fatalf("Turn = %+v, %v; want a *TimeoutError", res, err)
	}
	if te.After != 2*time.Second || te.ThreadID == "" {
		t.Errorf("TimeoutError = %+v", te)
	}
	if elapsed < 2*time.Second || elapsed > 4*time.Second {
		t.Errorf("Turn returned after %s, want about 2s", elapsed)
	}
	// The child is still usable.
	res, err = b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "after timeout", Params: backend.ThreadParams{Cwd: e.cwd}})
	if err != nil || res.Text != "MOCK_REPLY: after timeout" {
		t.Fatalf("Turn after timeout = %+v, %v", res, err)
	}
}

// contractUnknownThread: a turn sent as it is (SameThread) to a thread
// Codex does not know is an IsError result with Codex's own words.
func contractUnknownThread(t *testing.T, b backend.Backend, e *contractEnv) {
	const id = "01a1ffa3-0000-7000-8000-000000000000"
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: id, Prompt: "anyone there?", SameThread: true})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if !res.IsError || res.Status != "failed" || !strings.Contains(res.Text, e.expect.unknownThread) || res.ThreadID != id {
		t.Errorf("Turn = %+v, want an IsError result mentioning %s", res, e.expect.unknownThread)
	}
}

func contractModelError(t *testing.T, b backend.Backend, e *contractEnv) {
	rec := newRecorder(nil)
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "FAIL500 now", Params: backend.ThreadParams{Cwd: e.cwd}, Handler: rec})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if !res.IsError || res.Status != "failed" || !strings.Contains(res.Text, "high demand") || res.ThreadID == "" {
		t.Errorf("Turn = %+v, want a failed IsError result with Codex's message", res)
	}
	if !contains(rec.types(), "error") {
		t.Errorf("events %v lack the error event", rec.types())
	}
	if e.kind == KindMCPServer && e.real {
		// Measured: 0.153.4 answers the next codex-reply on a failed
		// thread with an empty text, so the rest is app-server's contract.
		return
	}
	// The thread takes the next turn.
	res2, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "after the error"})
	if err != nil || res2.IsError || res2.Text != "MOCK_REPLY: after the error" {
		t.Errorf("Turn after the model error = %+v, %v", res2, err)
	}
}

// contractSteer: input given to a busy turn reaches its model at once (the
// model request in flight is dropped) and the turn answers it; a thread
// without a running turn refuses it with a *SteerError, so that the caller
// delivers the input as a turn.
func contractSteer(t *testing.T, b backend.Backend, e *contractEnv) {
	if e.kind == KindMCPServer {
		if _, ok := b.(backend.Steerer); ok {
			t.Errorf("%T is a Steerer; mcp-server cannot steer", b)
		}
		return
	}
	checkNotSteered := func(err error, want backend.SteerRefusal) {
		t.Helper()
		var se *backend.SteerError
		if !errors.Is(err, backend.ErrNotSteered) || !errors.As(err, &se) || se.Why != want {
			t.Errorf("Steer = %v, want a *SteerError %s (ErrNotSteered)", err, want)
		}
	}
	checkNotSteered(steerOf(t, b).Steer(ctxFor(t, time.Second), "01a1ffa3-0000-7000-8000-000000000000", "nobody"), backend.SteerNoTurn)
	rec := newRecorder(nil)
	type out struct {
		res *backend.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "SLOW=30 first part", Params: backend.ThreadParams{Cwd: e.cwd}, Handler: rec})
		done <- out{res, err}
	}()
	rec.waitType(t, e.expect.started, 30*time.Second)
	events, _ := rec.snapshot()
	thread := events[len(events)-1].ThreadID
	start := time.Now()
	if err := steerOf(t, b).Steer(ctxFor(t, 10*time.Second), thread, "steered input"); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	o := <-done
	if o.err != nil || o.res.IsError || o.res.Text != "MOCK_REPLY: steered input" {
		t.Errorf("steered Turn = %+v, %v; want the reply to the steered input", o.res, o.err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the steered turn ended %s after the steer; the model request in flight (SLOW=30) should have been dropped", d)
	}
	checkNotSteered(steerOf(t, b).Steer(ctxFor(t, time.Second), thread, "too late"), backend.SteerNoTurn)
}

// contractFork: app-server forks a thread: the new thread's model is given
// the source's earlier turns, the source goes on without the fork's, and a
// new process forks a thread of an earlier one (from Codex's storage). A
// thread Codex does not have is ErrForkRefused. mcp-server cannot fork.
func contractFork(t *testing.T, b backend.Backend, e *contractEnv) {
	if e.kind == KindMCPServer {
		if _, ok := b.(backend.Forker); ok {
			t.Errorf("%T is a Forker; mcp-server cannot fork", b)
		}
		return
	}
	f := b.(backend.Forker)
	src, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "remember alpha", Params: backend.ThreadParams{Cwd: e.cwd}})
	if err != nil || src.IsError {
		t.Fatalf("Turn = %+v, %v", src, err)
	}
	fork, err := f.Fork(ctxFor(t, 60*time.Second), backend.ForkRequest{ThreadID: src.ThreadID, Params: backend.ThreadParams{Cwd: e.cwd}})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if fork.ThreadID == "" || fork.ThreadID == src.ThreadID || fork.ForkedFrom != src.ThreadID {
		t.Fatalf("Fork = %+v, want a new thread forked from %s", fork, src.ThreadID)
	}
	turn := func(b backend.Backend, thread, prompt string) string {
		t.Helper()
		res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: thread, Prompt: prompt, Params: backend.ThreadParams{Cwd: e.cwd}})
		if err != nil || res.IsError || res.ThreadID != thread {
			t.Fatalf("Turn on %s = %+v, %v", thread, res, err)
		}
		return res.Text
	}
	got := []string{
		turn(b, fork.ThreadID, "only on the fork"),
		turn(b, fork.ThreadID, "RECALL on the fork"),
		turn(b, src.ThreadID, "RECALL on the source"),
	}
	want := []string{
		"MOCK_REPLY: only on the fork",
		"MOCK_RECALL: remember alpha | only on the fork",
		"MOCK_RECALL: remember alpha",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("turns after the fork (-want +got):\n%s", diff)
	}
	if err := b.Close(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	b2 := newTestBackend(t, e.cfg)
	fork2, err := b2.(backend.Forker).Fork(ctxFor(t, 60*time.Second), backend.ForkRequest{ThreadID: fork.ThreadID})
	if err != nil || fork2.ForkedFrom != fork.ThreadID {
		t.Fatalf("Fork in a new process = %+v, %v", fork2, err)
	}
	if got, want := turn(b2, fork2.ThreadID, "RECALL in a new process"), "MOCK_RECALL: remember alpha | only on the fork | RECALL on the fork"; got != want {
		t.Errorf("the fork of the fork = %q, want %q", got, want)
	}
	_, err = b2.(backend.Forker).Fork(ctxFor(t, 60*time.Second), backend.ForkRequest{ThreadID: "01a1ffa3-0000-7000-8000-0000000000ab"})
	if !errors.Is(err, backend.ErrForkRefused) || !strings.Contains(err.Error(), "no rollout found") {
		t.Errorf("Fork of an unknown thread = %v, want ErrForkRefused: no rollout found", err)
	}
}

func contractPatchApproval(t *testing.T, b backend.Backend, e *contractEnv) {
	path := filepath.Join(e.cwd, "patched.txt")
	rec := newRecorder(func(*backend.Approval) backend.Decision { return backend.Decision{Kind: backend.Approve} })
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{
		Prompt:  "PATCH=" + path,
		Params:  backend.ThreadParams{Cwd: e.cwd, Options: Options{ApprovalPolicy: "on-request", Sandbox: "read-only"}},
		Handler: rec,
	})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if res.IsError || !strings.HasPrefix(res.Text, "MOCK_DONE: tool output was:") {
		t.Errorf("Turn = %+v, want a completed turn after the patch", res)
	}
	_, apps := rec.snapshot()
	if len(apps) != 1 || apps[0].Kind != backend.ApprovalPatch || !strings.Contains(string(apps[0].Changes), path) || apps[0].ThreadID != res.ThreadID {
		t.Fatalf("approvals = %+v, want one patch approval of %s", apps, path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("approved patch not applied: %v", err)
	}
}
