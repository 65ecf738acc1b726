package codexchild

import (
	"os"
	"path/filepath"
	"strings"
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
	events, _ = rec.snapshot()
	thread := events[len(events)-1].ThreadID
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
