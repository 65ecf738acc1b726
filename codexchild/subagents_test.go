package codexchild

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// contractSubAgents: a turn whose agent starts a sub-agent of its own
// (SPAWN_SUB: Codex's spawn_agent) is done only when the sub-agent is; its
// Result lists the sub-agent with its task and end state, and the turn's
// handler hears of the sub-agent's states. With a short
// Config.SubAgentWait the Result comes when the wait has passed and says
// so; an Interrupt during the wait ends it at once. mcp-server does not
// follow sub-agents.
func contractSubAgents(t *testing.T, b backend.Backend, e *contractEnv) {
	if e.kind == KindMCPServer {
		return
	}
	rec := newRecorder(nil)
	start := time.Now()
	res, err := b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{Prompt: "SPAWN_SUB=2", Params: backend.ThreadParams{Cwd: e.cwd}, Handler: rec})
	took := time.Since(start)
	if err != nil || res.IsError || len(res.SubAgents) != 1 {
		t.Fatalf("Turn = %+v, %v; want a completed turn with one sub-agent", res, err)
	}
	sub := res.SubAgents[0]
	if !strings.HasPrefix(res.Text, "MOCK_DONE: tool output was: ") || !strings.Contains(res.Text, sub.ThreadID) {
		t.Errorf("Text = %q, want the spawn's output naming %s", res.Text, sub.ThreadID)
	}
	want := backend.SubAgent{ThreadID: sub.ThreadID, ParentThreadID: res.ThreadID, Task: "SLOW=2 sub-agent task", Status: "completed"}
	if diff := cmp.Diff(want, sub); diff != "" || res.SubAgentsNote != "" {
		t.Errorf("sub-agent (-want +got):\n%s\nnote %q", diff, res.SubAgentsNote)
	}
	if took < 2*time.Second {
		t.Errorf("Turn returned after %s, before its sub-agent's 2 s", took)
	}
	var states []string
	parentEnded, childEnded := -1, -1
	events, _ := rec.snapshot()
	for i, ev := range events {
		if ev.Type == "turn/completed" && ev.ThreadID == res.ThreadID && parentEnded < 0 {
			parentEnded = i
		}
		if ev.Type != subAgentMethod {
			continue
		}
		if strings.Contains(string(ev.Params), `"completed"`) && childEnded < 0 {
			childEnded = i
		}
		a := ev.Activity()
		if ev.ThreadID != res.ThreadID || a.Kind != backend.ActivityItem || a.Item == nil || a.Item.Type != "sub_agent" || len(a.SubAgents) != 1 {
			t.Errorf("sub-agent event %+v (activity %+v), want an item of the parent's thread", ev, a)
			continue
		}
		states = append(states, a.SubAgents[0].Status)
	}
	if len(states) == 0 || states[len(states)-1] != "completed" || !contains(states, "running") {
		t.Errorf("the handler heard the sub-agent's states %v, want running … completed", states)
	}
	// Codex ended the parent's turn first; the Result waited for the child.
	if parentEnded < 0 || childEnded < parentEnded {
		t.Errorf("events %v: the parent's turn/completed at %d, the sub-agent's end at %d; want the parent's first", rec.types(), parentEnded, childEnded)
	}

	// The next turn of the same thread waits for its own sub-agent too.
	start = time.Now()
	res2, err := b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "SPAWN_SUB=2", Params: backend.ThreadParams{Cwd: e.cwd}, Handler: newRecorder(nil)})
	if took := time.Since(start); err != nil || res2.IsError || len(res2.SubAgents) != 1 || res2.SubAgents[0].Status != "completed" ||
		res2.SubAgents[0].ThreadID == sub.ThreadID || took < 2*time.Second {
		t.Errorf("the thread's next turn with a sub-agent = %+v, %v after %s; want it done with its own sub-agent, after its 2 s", res2, err, took)
	}

	// An Interrupt while the turn waits for its sub-agent.
	rec = newRecorder(nil)
	type out struct {
		res *backend.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{Prompt: "SPAWN_SUB=30", Params: backend.ThreadParams{Cwd: e.cwd}, Handler: rec})
		done <- out{res, err}
	}()
	rec.waitType(t, "turn/completed", 60*time.Second)
	thread := ""
	events, _ = rec.snapshot()
	for _, ev := range events {
		if ev.Type == "turn/completed" {
			thread = ev.ThreadID // the parent's: the only turn/completed its handler hears
		}
	}
	if err := b.Interrupt(ctxFor(t, 5*time.Second), thread); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		if o.err != nil || !o.res.IsError || o.res.Status != "interrupted" || !strings.HasPrefix(o.res.Partial, "MOCK_DONE:") ||
			!strings.Contains(o.res.SubAgentsNote, "interrupted") {
			t.Errorf("Turn interrupted during its sub-agents = %+v, %v", o.res, o.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Turn did not return within 5 s of the Interrupt")
	}

	// A sub-agent's approval is asked of the turn's handler.
	rec = newRecorder(func(*backend.Approval) backend.Decision { return backend.Decision{Kind: backend.Approve} })
	res, err = b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{Prompt: "SPAWN_SUB TASK=RUN_SHELL ESCALATE",
		Params: backend.ThreadParams{Cwd: e.cwd, Options: Options{ApprovalPolicy: "on-request", Sandbox: "workspace-write"}}, Handler: rec})
	if err != nil || res.IsError || len(res.SubAgents) != 1 || res.SubAgents[0].Status != "completed" {
		t.Fatalf("Turn with a sub-agent that asks = %+v, %v", res, err)
	}
	_, apps := rec.snapshot()
	if len(apps) != 1 || apps[0].ThreadID != res.SubAgents[0].ThreadID || apps[0].Command != "touch mock_shell_probe.txt" {
		t.Errorf("approvals = %+v, want the sub-agent's command", apps)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "mock_shell_probe.txt")); err != nil {
		t.Errorf("the sub-agent's approved command did not run: %v", err)
	}

	if err := b.Close(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}

	contractSubAgentInterrupts(t, e)

	// A short wait: the Result comes when it has passed, and says so.
	cfg := e.cfg
	cfg.SubAgentWait = time.Second
	b2 := newTestBackend(t, cfg)
	res, err = b2.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{Prompt: "SPAWN_SUB=30", Params: backend.ThreadParams{Cwd: e.cwd}})
	if err != nil || res.IsError || len(res.SubAgents) != 1 || res.SubAgents[0].Status == "completed" ||
		res.SubAgentsNote != "its sub-agent still running after waiting 1s for them" {
		t.Errorf("Turn with a short wait = %+v, %v; want a completed turn whose sub-agent still runs, said so", res, err)
	}
}

// contractSubAgentInterrupts: an Interrupt while the turn runs in Codex
// (its handler interrupts on hearing the spawn's collab item) or the moment
// it ends there (on hearing the parent's turn/completed, before the backend
// has begun to wait for the sub-agent), when the sub-agent's own turn may
// not have started yet, interrupts it all the same: the Result is an
// interrupted one with the note, the thread is free for its next turn, and
// Codex ends the sub-agent's turn as interrupted.
func contractSubAgentInterrupts(t *testing.T, e *contractEnv) {
	for _, tc := range []struct {
		name    string
		when    func(backend.Event) bool
		partial string // the Result's Partial starts so
	}{
		{"while the turn runs", func(ev backend.Event) bool {
			return ev.Type == "item/completed" && strings.Contains(string(ev.Params), `"collabAgentToolCall"`)
		}, ""},
		{"as the turn ends in Codex", func(ev backend.Event) bool { return ev.Type == "turn/completed" }, "MOCK_DONE:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ended := make(chan backend.Event, 256) // turn/completed of no running turn: the sub-agent's
			cfg := e.cfg
			cfg.OnEvent = func(ev backend.Event) {
				if ev.Type == "turn/completed" {
					select {
					case ended <- ev:
					default:
					}
				}
			}
			b := newTestBackend(t, cfg)
			rec := newRecorder(nil)
			var once sync.Once
			rec.then = func(ev backend.Event) {
				if tc.when(ev) {
					once.Do(func() { _ = b.Interrupt(context.Background(), ev.ThreadID) })
				}
			}
			res, err := b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{Prompt: "SPAWN_SUB=30", Params: backend.ThreadParams{Cwd: e.cwd}, Handler: rec})
			if err != nil || !res.IsError || res.Status != "interrupted" || !strings.HasPrefix(res.Partial, tc.partial) ||
				len(res.SubAgents) != 1 || !strings.Contains(res.SubAgentsNote, "interrupted") {
				t.Fatalf("Turn interrupted = %+v, %v", res, err)
			}
			next, err := b.Turn(ctxFor(t, 90*time.Second), backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "hello", Params: backend.ThreadParams{Cwd: e.cwd}})
			if err != nil || next.IsError {
				t.Errorf("the interrupted thread's next turn = %+v, %v; want it run", next, err)
			}
			status, within := "", ctxFor(t, 60*time.Second)
			for status == "" {
				select {
				case ev := <-ended:
					if ev.ThreadID != res.SubAgents[0].ThreadID {
						continue
					}
					var c turnCompleted
					if err := json.Unmarshal(ev.Params, &c); err != nil {
						t.Fatal(err)
					}
					status = c.Turn.Status
				case <-within.Done():
					t.Fatal("the sub-agent's turn did not end")
				}
			}
			if status != "interrupted" {
				t.Errorf("the sub-agent's turn ended %s, want interrupted", status)
			}
			if err := b.Close(ctxFor(t, 20*time.Second)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
