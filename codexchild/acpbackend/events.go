package acpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// acpTurn is the state of a running turn of an acpThread; guarded by the
// thread's mu.
type acpTurn struct {
	handler    backend.Handler // nil drops events and denies approvals
	onAccepted func()
	accepted   bool
	dirty      bool              // the handler had events since its last Flush
	kinds      map[string]string // tool call id → its ACP kind
	partial    strings.Builder   // the agent's text so far
	lastMsg    string            // the messageId of the last chunk
	// interrupting is set when Interrupt (or an Abort) cancelled the turn.
	interrupting bool
}

// deliver passes an event to the turn's handler; the thread's mu is held.
func (t *acpTurn) deliver(e backend.Event) {
	if t.handler == nil {
		return
	}
	t.handler.Event(e)
	t.dirty = true
}

// accept calls OnAccepted once; the thread's mu is held.
func (t *acpTurn) accept() {
	if t.accepted {
		return
	}
	t.accepted = true
	if t.onAccepted != nil {
		t.onAccepted()
	}
}

// flush calls the handler's Flush when it had events; the thread's mu is
// held.
func (t *acpTurn) flush() {
	if !t.dirty {
		return
	}
	t.dirty = false
	if f, ok := t.handler.(backend.Flusher); ok {
		f.Flush()
	}
}

// onEvent receives the agent client's events, in order, on its event
// goroutine. Events outside a turn (the replay of session/load, updates
// after a prompt's answer) reach no handler.
func (th *acpThread) onEvent(ev acp.Event) {
	th.mu.Lock()
	defer th.mu.Unlock()
	if ev.Kind == acp.EventUsage && !ev.Replay {
		th.usage = withUpdate(th.usage, ev.Usage) // kept even when no turn runs
	}
	t := th.turn
	if t == nil || ev.Replay {
		return
	}
	switch ev.Kind {
	case acp.EventMessage, acp.EventThought, acp.EventToolCall, acp.EventPlan, acp.EventUsage, acp.EventPermission:
		if ev.Turn > 0 {
			t.accept() // the agent works on the prompt: it has read it
		}
	}
	if ev.Kind == acp.EventMessage && ev.Turn > 0 {
		if t.partial.Len() > 0 && ev.MessageID != t.lastMsg {
			t.partial.WriteString("\n\n")
		}
		t.partial.WriteString(ev.Text)
		t.lastMsg = ev.MessageID
	}
	e := t.translate(ev)
	if ev.Kind == acp.EventUsage {
		u := th.usage
		e.Neutral.Usage = &u
	}
	t.deliver(e)
}

// onIdle flushes the running turn's handler when no more events wait.
func (th *acpThread) onIdle() {
	th.mu.Lock()
	defer th.mu.Unlock()
	if t := th.turn; t != nil {
		t.flush()
	}
}

// translate maps an ACP event to the backend's Event and its Activity.
func (t *acpTurn) translate(ev acp.Event) backend.Event {
	e := backend.Event{ThreadID: ev.SessionID, TurnID: turnID(ev.Turn), Method: "session/update", Type: ev.Update, Params: ev.Raw}
	a := &backend.Activity{Kind: backend.ActivityNone}
	switch ev.Kind {
	case acp.EventToolCall:
		tc := ev.Tool
		if tc.Kind != "" {
			t.kinds[tc.ID] = tc.Kind
		}
		a.Kind = backend.ActivityItem
		a.Item = &backend.Item{ID: tc.ID, Type: itemType(t.kinds[tc.ID]), Status: itemStatus(tc.Status), Summary: tc.Title, Started: tc.Created}
	case acp.EventUsage:
		a.Kind = backend.ActivityTokens // its Usage is the thread's, set by onEvent
	case acp.EventPlan:
		var steps []string
		for _, p := range ev.Plan {
			steps = append(steps, p.Content+" ("+p.Status+")")
		}
		a.Kind, a.Summary = backend.ActivityNote, "plan: "+strings.Join(steps, "; ")
	case acp.EventPermission:
		e.Method, e.Type = "session/request_permission", "request_permission"
		a.Kind, a.Summary = backend.ActivityApproval, "approval: "+ev.Permission.Tool.Title
	case acp.EventPermissionDone:
		e.Method, e.Type = "session/request_permission", "permission_done"
		a.Summary = "approval answered: " + string(ev.Decision)
	}
	e.Neutral = a
	return e
}

// itemType is the Item.Type of a tool call of an ACP kind.
func itemType(kind string) string {
	switch kind {
	case "execute":
		return "command"
	case "edit", "delete", "move":
		return "file_change"
	}
	return "tool_call"
}

// itemStatus is the Item.Status of a tool call's ACP status.
func itemStatus(s string) string {
	switch s {
	case "pending", "in_progress":
		return "running"
	}
	return s // completed, failed, "" (unchanged)
}

// ask turns a permission request into an Approval for the running turn's
// handler and waits for its answer (or for the request to end: the turn
// was interrupted or ended, the agent died).
func (th *acpThread) ask(ctx context.Context, req acp.PermissionRequest) acp.Decision {
	th.mu.Lock()
	t := th.turn
	if t == nil || t.handler == nil {
		th.mu.Unlock()
		return acp.RejectOnce
	}
	answer := make(chan backend.Decision, 1)
	var answered atomic.Bool
	a := backend.NewApproval(approvalOf(th.b.nextApproval(), th.cwd, req), func(d backend.Decision) error {
		if !answered.CompareAndSwap(false, true) {
			return backend.ErrAlreadyAnswered
		}
		answer <- d
		return nil
	})
	t.handler.Approval(a)
	t.dirty = true
	th.mu.Unlock()
	select {
	case d := <-answer:
		if note := backend.DenialNote(a, d); note != "" {
			th.tellDenial(ctx, note)
		}
		switch d.Kind {
		case backend.Approve:
			return acp.AllowOnce
		case backend.ApproveForSession:
			return acp.AllowAlways
		case backend.Abort:
			th.b.background(func() {
				if err := th.interrupt(context.Background()); err != nil {
					th.b.log.Warn("acp: interrupt after an aborted approval", "err", err)
				}
			})
		}
		return acp.RejectOnce
	case <-ctx.Done():
		return acp.Cancelled // the client has answered cancelled already
	}
}

// tellDenial gives the agent a denial's note. The agent reads its own
// words for any denial (claude-agent-acp: "User refused permission to run
// tool"), and ACP's answer has no room for a reason. An agent that takes
// input for its running turn (the steering extension, acp.Session.Steer)
// gets the note there, sent before the answer: claude-agent-acp holds it
// until the permission is answered, then the model reads it in the same
// turn, after the denial. Otherwise, or when that fails, the thread's next
// prompt opens with it.
func (th *acpThread) tellDenial(ctx context.Context, note string) {
	th.mu.Lock()
	s := th.sess
	th.mu.Unlock()
	if s != nil {
		ok, err := s.Steer(ctx, note)
		if ok {
			return
		}
		if err != nil && !errors.Is(err, acp.ErrUnsupported) {
			th.b.log.Warn("acp: the denial's note could not steer the turn; the next prompt opens with it", "err", err)
		}
	}
	th.mu.Lock()
	th.notes = append(th.notes, note)
	th.mu.Unlock()
}

// approvalOf is the Approval of a permission request: exec for a tool of
// kind execute, patch for edit, delete and move, "tool" for the others.
func approvalOf(id, cwd string, req acp.PermissionRequest) backend.Approval {
	a := backend.Approval{ID: id, Kind: backend.ApprovalTool, ThreadID: req.SessionID, TurnID: turnID(req.Turn), CallID: req.Tool.ID,
		Message: req.Tool.Title, Cwd: cwd, Raw: req.Raw}
	switch req.Tool.Kind {
	case "execute":
		a.Kind = backend.ApprovalExec
		a.Command = commandOf(req.Tool.RawInput)
	case "edit", "delete", "move":
		a.Kind = backend.ApprovalPatch
	}
	return a
}

// commandOf reads rawInput.command, a string or a list of words.
func commandOf(raw json.RawMessage) string {
	var in struct {
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal(raw, &in) != nil || len(in.Command) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(in.Command, &s) == nil {
		return s
	}
	var words []string
	if json.Unmarshal(in.Command, &words) == nil {
		return strings.Join(words, " ")
	}
	return ""
}
