package codexchild

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// fakeChildEnv makes the test binary play a scripted codex mcp-server (see
// runFakeChild) instead of running tests.
const fakeChildEnv = "CODEXCHILD_FAKE_CHILD"

// runFakeChild is a scripted `codex mcp-server` that reproduces Codex's
// stale-listener bug deterministically (the real one shows it in 2 runs of
// 4): after the first turn is cancelled, the next turn on the same thread
// gets its events, an approval and its result under the cancelled request
// id, and a late result of the dead id arrives while another thread runs.
func runFakeChild() int {
	r := jsonrpcframe.NewLineReader(os.Stdin, nil)
	w := jsonrpcframe.NewLineWriter(os.Stdout)
	const thread1, thread2 = "01a1ffa3-1111-7000-8000-000000000001", "01a1ffa3-2222-7000-8000-000000000002"
	var first jsonrpcframe.ID // the request id of the first (cancelled) turn
	turnID := "turn-1"
	event := func(reqID jsonrpcframe.ID, thread, typ string, extra map[string]any) {
		msg := map[string]any{"type": typ}
		for k, v := range extra {
			msg[k] = v
		}
		n, _ := jsonrpcframe.NewNotification("codex/event", map[string]any{
			"_meta": map[string]any{"requestId": reqID, "threadId": thread}, "id": turnID, "msg": msg})
		_ = w.Write(n)
	}
	result := func(id jsonrpcframe.ID, thread, text string) {
		resp, _ := jsonrpcframe.NewResponse(id, map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": text}},
			"structuredContent": map[string]any{"threadId": thread, "content": text}})
		_ = w.Write(resp)
	}
	for {
		m, err := r.Read()
		if err != nil {
			if _, ok := err.(*jsonrpcframe.MessageError); ok {
				continue
			}
			return 0
		}
		switch m.Method {
		case "initialize":
			resp, _ := jsonrpcframe.NewResponse(m.ID, map[string]any{"protocolVersion": "2025-06-18",
				"capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "fake", "version": "0.153.4"}})
			_ = w.Write(resp)
		case "tools/list":
			resp, _ := jsonrpcframe.NewResponse(m.ID, map[string]any{"tools": []any{map[string]any{"name": "codex"}, map[string]any{"name": "codex-reply"}}})
			_ = w.Write(resp)
			if os.Getenv(fakeChildEnv) == "nostdin" {
				// A wedged child: it stops reading its stdin.
				time.Sleep(time.Hour)
			}
		case "notifications/cancelled":
			event(first, thread1, "turn_aborted", map[string]any{"reason": "interrupted"})
		case "tools/call":
			switch os.Getenv(fakeChildEnv) { // accepted_test.go
			case "dieonturn": // read the turn, then died before a word about it
				return 3
			case "dielate":
				time.Sleep(fakeLate)
				return 3
			case "acklate":
				time.Sleep(fakeLate)
				event(m.ID, thread1, "task_started", nil)
				continue
			}
			var p struct {
				Name      string            `json:"name"`
				Arguments map[string]string `json:"arguments"`
			}
			_ = json.Unmarshal(m.Params, &p)
			switch {
			case p.Name == "codex" && first.IsZero():
				first = m.ID
				event(m.ID, thread1, "session_configured", nil)
				event(m.ID, thread1, "task_started", nil)
			case p.Name == "codex-reply":
				// Everything under the cancelled id: the stale listener.
				turnID = "turn-2"
				event(m.ID, thread1, "task_started", nil)
				event(first, thread1, "exec_approval_request", map[string]any{"call_id": "call_1", "reason": "stale reason"})
				req, _ := jsonrpcframe.NewRequest(jsonrpcframe.IntID(0), "elicitation/create", map[string]any{
					"message": "Allow?", "threadId": thread1, "codex_elicitation": "exec-approval",
					"codex_mcp_tool_call_id": first.String(), "codex_call_id": "call_1",
					"codex_command": []string{"/bin/bash", "-lc", "echo hi"}, "codex_cwd": "/w"})
				_ = w.Write(req)
				ans, err := r.Read()
				if err != nil || ans.ID != jsonrpcframe.IntID(0) || !strings.Contains(string(ans.Result), `"decision":"approved"`) {
					fmt.Fprintf(os.Stderr, "fake: bad approval answer %v %v\n", ans, err)
					return 3
				}
				event(first, thread1, "agent_message", map[string]any{"message": "STALE_ROUTED"})
				event(first, thread1, "task_complete", nil)
				result(first, thread1, "STALE_ROUTED")
			case p.Name == "codex":
				// A late result of the dead id for a thread with no turn,
				// then this turn's own events and result.
				result(first, thread1, "LATE_RESULT")
				turnID = "turn-3"
				event(m.ID, thread2, "session_configured", nil)
				event(m.ID, thread2, "agent_message", map[string]any{"message": "FRESH"})
				result(m.ID, thread2, "FRESH")
			}
		}
	}
}

// TestStdinWedged: a child that stops reading its stdin is killed when a
// write to it cannot finish in time, and the call fails with an *ExitError
// instead of blocking forever.
func TestStdinWedged(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	old := stdinWriteTimeout
	stdinWriteTimeout = 500 * time.Millisecond
	t.Cleanup(func() { stdinWriteTimeout = old })
	b := newBackend(t, Config{Bin: exe, Env: []string{fakeChildEnv + "=nostdin", "GORACE=atexit_sleep_ms=0"}})
	big := strings.Repeat("x", 1<<20) // larger than a pipe buffer
	start := time.Now()
	_, err = b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: big})
	var ee *backend.ExitError
	if !errors.As(err, &ee) || ee.Status.Signal != "killed" {
		t.Fatalf("Turn = %v, want an *ExitError (killed)", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Turn failed after %s", d)
	}
}

// TestStaleListenerRouting checks the routing of Codex's stale-listener bug
// against the scripted child.
func TestStaleListenerRouting(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var orphans []backend.Event
	b := newBackend(t, Config{Bin: exe, Env: []string{fakeChildEnv + "=1", "GORACE=atexit_sleep_ms=0"}, OnEvent: func(e backend.Event) { orphans = append(orphans, e) }})

	rec := newRecorder(nil)
	done := make(chan *backend.Result, 1)
	go func() {
		res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "first", Handler: rec})
		if err != nil {
			t.Errorf("first Turn: %v", err)
		}
		done <- res
	}()
	rec.waitType(t, "task_started", 10*time.Second)
	const thread1 = "01a1ffa3-1111-7000-8000-000000000001"
	if err := b.Interrupt(ctxFor(t, time.Second), thread1); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res == nil || res.Status != "interrupted" || res.ThreadID != thread1 {
		t.Fatalf("first Turn = %+v, want interrupted on %s", res, thread1)
	}

	rec2 := newRecorder(func(*backend.Approval) backend.Decision { return backend.Decision{Kind: backend.Approve} })
	res, err := b.Turn(ctxFor(t, 10*time.Second), backend.TurnRequest{ThreadID: thread1, Prompt: "again", Handler: rec2, SameThread: true})
	if err != nil {
		t.Fatalf("reply Turn: %v", err)
	}
	if res.Text != "STALE_ROUTED" || res.ThreadID != thread1 || res.IsError {
		t.Errorf("reply Turn = %+v, want the result sent under the dead id", res)
	}
	if got, want := strings.Join(rec2.types(), ","), "task_started,exec_approval_request,agent_message,task_complete"; got != want {
		t.Errorf("reply events = %s, want %s", got, want)
	}
	_, apps := rec2.snapshot()
	if len(apps) != 1 || apps[0].Reason != "stale reason" || apps[0].Command != "echo hi" {
		t.Errorf("approvals = %+v, want one routed by thread", apps)
	}

	res, err = b.Turn(ctxFor(t, 10*time.Second), backend.TurnRequest{Prompt: "fresh"})
	if err != nil {
		t.Fatalf("new Turn: %v", err)
	}
	if res.Text != "FRESH" || res.ThreadID == thread1 {
		t.Errorf("new Turn = %+v; the late result of the dead id must be dropped", res)
	}
	if err := b.Close(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, e := range orphans {
		if e.Type != "turn_aborted" {
			t.Errorf("unexpected orphan event %s", e.Type)
		}
	}
}
