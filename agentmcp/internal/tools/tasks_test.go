package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// callTask runs a tool as a modern client that declared the tasks
// extension (and elicitation) calls it.
func (h *harness) callTask(name, args string) (*mcpconn.ToolResult, error) {
	h.t.Helper()
	a, err := mcpconn.ParseArgs(json.RawMessage(args))
	if err != nil {
		return nil, err
	}
	h.next++
	id := jsonrpcframe.IntID(h.next)
	return h.env.CallTool(context.Background(), &mcpconn.ToolCall{ID: id, RawID: id.Raw(), Name: name, Args: a,
		Modern: true, Elicitation: true, Tasks: true})
}

// task makes a task, or fails.
func (h *harness) task(name, args string) *mcpconn.Task {
	h.t.Helper()
	r, err := h.callTask(name, args)
	if err != nil {
		h.t.Fatalf("%s %s: %v", name, args, err)
	}
	if r.Task == nil {
		h.t.Fatalf("%s %s: a result (%q), not a task", name, args, r.Text)
	}
	return r.Task
}

// until polls tasks/get until the task has status, and returns it.
func (h *harness) until(id, status string) *mcpconn.Task {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk, err := h.env.GetTask(context.Background(), id)
		if err != nil {
			h.t.Fatalf("tasks/get %s: %v", id, err)
		}
		if tk.Status == status {
			return tk
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("task %s is %s (%s), want %s", id, tk.Status, tk.StatusMessage, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTaskResultIsTheCallsResult: a codex or codex-reply call that may
// make a task answers with one at once, working; tasks/get ends completed
// with exactly the result the same call gives without tasks.
func TestTaskResultIsTheCallsResult(t *testing.T) {
	h := newHarness(t)
	tk := h.task("codex", `{"prompt":"hello","identity":"arch"}`)
	if tk.Status != mcpconn.TaskWorking || !strings.HasPrefix(tk.ID, "task-") || len(tk.ID) != len("task-")+32 ||
		tk.TTL != 0 || tk.PollInterval != TaskPollInterval || !strings.Contains(tk.StatusMessage, "turn started as a task: agent_id codex-") {
		t.Errorf("the new task: %+v", tk)
	}
	done := h.until(tk.ID, mcpconn.TaskCompleted)
	agentID := done.Result.Structured.(map[string]any)["agent_id"].(string)
	if done.TTL < TaskRetention || done.StatusMessage != "[arch] turn completed" {
		t.Errorf("ttl %s, message %q", done.TTL, done.StatusMessage)
	}

	tk = h.task("codex-reply", `{"agent_id":"`+agentID+`","prompt":"again"}`)
	got := h.until(tk.ID, mcpconn.TaskCompleted).Result
	want, err := h.call("codex-reply", `{"agent_id":"`+agentID+`","prompt":"again"}`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the task's result differs from the call's (-call +task):\n%s", diff)
	}

	// background: true keeps its answer; a client without the extension
	// gets the result.
	r, err := h.callTask("codex-reply", `{"agent_id":"`+agentID+`","prompt":"bg","background":true}`)
	if err != nil || r.Task != nil || !strings.Contains(r.Text, "started in the background") {
		t.Errorf("background: %+v, %v", r, err)
	}
	h.ok("agent_wait", `{"agent_id":"`+agentID+`"}`)
	r, err = h.callModern("codex-reply", `{"agent_id":"`+agentID+`","prompt":"sync"}`, modern{})
	if err != nil || r.Task != nil || r.Text != "echo: sync" {
		t.Errorf("without the extension: %+v, %v", r, err)
	}
}

// TestTaskApproval: an approval makes the task input_required with the
// approval's form; tasks/update answers it (keys not asked are ignored)
// and the same turn goes on to the end.
func TestTaskApproval(t *testing.T) {
	h := newHarness(t)
	tk := h.task("codex", `{"prompt":"ASK 1","identity":"arch"}`)
	asking := h.until(tk.ID, mcpconn.TaskInputRequired)
	req, ok := asking.InputRequests["approval-1"]
	if !ok || len(asking.InputRequests) != 1 || req.Method != "elicitation/create" {
		t.Fatalf("input requests: %+v", asking.InputRequests)
	}
	form := req.Params.(map[string]any)
	if form["mode"] != "form" || form["command"] != "make 1" || asking.StatusMessage != "[arch] Allow Codex to run `make 1` in `/src`?" {
		t.Errorf("form %v, message %q", form, asking.StatusMessage)
	}
	if err := h.env.UpdateTask(context.Background(), tk.ID, json.RawMessage(`{"approval-9":{"action":"decline"},"approval-1":{"action":"accept","content":{}}}`)); err != nil {
		t.Fatal(err)
	}
	done := h.until(tk.ID, mcpconn.TaskCompleted)
	if got := done.Result.Text; got != "decisions: approve" {
		t.Errorf("the turn's result is %q, want the approval's decision", got)
	}
	if h.fb.Approvals() != 1 {
		t.Errorf("%d approvals asked, want 1", h.fb.Approvals())
	}
	// An answer after the fact changes nothing.
	if err := h.env.UpdateTask(context.Background(), tk.ID, json.RawMessage(`{"approval-1":{"action":"decline"}}`)); err != nil {
		t.Errorf("a late tasks/update: %v", err)
	}
}

// TestTaskCancel: tasks/cancel interrupts the running turn (the task ends
// cancelled, the session interrupted, ready for codex-reply); a turn
// waiting in the queue never runs; a finished task stays as it was.
func TestTaskCancel(t *testing.T) {
	h := newHarness(t)
	running := h.task("codex", `{"prompt":"ASK 1","identity":"arch"}`)
	h.until(running.ID, mcpconn.TaskInputRequired)
	agentID := h.ok("agent_sessions", "")["sessions"].([]any)[0].(map[string]any)["agent_id"].(string)
	queued := h.task("codex-reply", `{"agent_id":"`+agentID+`","prompt":"never runs"}`)
	if q := h.until(queued.ID, mcpconn.TaskWorking); q.StatusMessage != "[arch] queued: the session has a turn running" {
		t.Errorf("the queued task says %q", q.StatusMessage)
	}
	ctx := context.Background()
	if err := h.env.CancelTask(ctx, queued.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.env.CancelTask(ctx, running.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{running.ID, queued.ID} {
		if c := h.until(id, mcpconn.TaskCancelled); !strings.Contains(c.StatusMessage, "cancelled: the turn was interrupted; continue with codex-reply") ||
			c.Result != nil || c.Err != nil {
			t.Errorf("cancelled task %s: %+v", id, c)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		// the denied approval is unlisted just after the turn's end
		st := h.ok("agent_status", `{"agent_id":"`+agentID+`"}`)["status"]
		if st == "interrupted" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session is %v after the cancel, want interrupted", st)
		}
	}
	prompts := h.fb.Prompts()
	for _, p := range prompts {
		if strings.Contains(p, "never runs") {
			t.Errorf("the cancelled queued turn reached Codex: %q", p)
		}
	}
	after := h.task("codex-reply", `{"agent_id":"`+agentID+`","prompt":"after"}`)
	h.until(after.ID, mcpconn.TaskCompleted)
	if err := h.env.CancelTask(ctx, after.ID); err != nil {
		t.Fatal(err)
	}
	h.until(after.ID, mcpconn.TaskCompleted)
}

// TestTaskErrors: a turn that fails with a JSON-RPC error makes a failed
// task carrying it; an unknown task id, and one expired after
// TaskRetention, are TASK_NOT_FOUND (-32602) for every method.
func TestTaskErrors(t *testing.T) {
	h := newHarness(t)
	tk := h.task("codex", `{"prompt":"FAIL_START","identity":"arch"}`)
	failed := h.until(tk.ID, mcpconn.TaskFailed)
	if failed.Err == nil || !strings.Contains(failed.StatusMessage, "[arch] failed: ") {
		t.Errorf("failed task: %+v", failed)
	}
	var pe *proxyerr.Error
	if !errors.As(failed.Err, &pe) || !strings.HasSuffix(pe.Msg, `(no session was kept: identity "arch" is free)`) {
		t.Errorf("the failed first turn's error: %v", failed.Err)
	}
	// As for a call that waits: the failed first turn kept no session, and
	// its identity is free.
	if n := len(h.ok("agent_sessions", "")["sessions"].([]any)); n != 0 {
		t.Errorf("%d sessions after the failed first turn, want none", n)
	}
	h.until(h.task("codex", `{"prompt":"again","identity":"arch"}`).ID, mcpconn.TaskCompleted)

	ctx := context.Background()
	for name, call := range map[string]func(id string) error{
		"get":    func(id string) error { _, err := h.env.GetTask(ctx, id); return err },
		"update": func(id string) error { return h.env.UpdateTask(ctx, id, json.RawMessage(`{}`)) },
		"cancel": func(id string) error { return h.env.CancelTask(ctx, id) },
	} {
		err := call("task-nope")
		if got, want := wireError(err), "-32602 Failed to retrieve task: Task not found"; got != want || !errors.Is(err, proxyerr.ErrTaskNotFound) {
			t.Errorf("%s of an unknown task: %s, want %s", name, got, want)
		}
	}

	now := time.Now()
	h.env.tasks.now = func() time.Time { return now.Add(TaskRetention + time.Minute) }
	_, err := h.env.GetTask(ctx, tk.ID)
	if got := wireError(err); !strings.HasPrefix(got, "-32602 Failed to retrieve task: Task has expired") {
		t.Errorf("an expired task: %s", got)
	}
}

// TestTaskRetentionCap: at most maxFinished finished tasks are kept; the
// oldest expire first.
func TestTaskRetentionCap(t *testing.T) {
	h := newHarness(t)
	first := h.task("codex", `{"prompt":"one","identity":"arch"}`)
	agentID := h.until(first.ID, mcpconn.TaskCompleted).Result.Structured.(map[string]any)["agent_id"].(string)
	var last string
	for i := 0; i < maxFinished; i++ {
		last = h.task("codex-reply", `{"agent_id":"`+agentID+`","prompt":"more"}`).ID
		h.until(last, mcpconn.TaskCompleted)
	}
	ctx := context.Background()
	if _, err := h.env.GetTask(ctx, first.ID); !strings.Contains(wireError(err), "Task has expired") {
		t.Errorf("the oldest of %d finished tasks: %v", maxFinished+1, err)
	}
	if _, err := h.env.GetTask(ctx, last); err != nil {
		t.Errorf("the latest task: %v", err)
	}
}
