package codexchild

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// This file is the reader side of MCPServer: one goroutine per child reads
// its stdout and routes each message to the call it belongs to. See the
// design notes on MCPServer.

// deadCall is what the backend remembers of an abandoned request, whose id
// Codex may still use (the stale-listener bug).
type deadCall struct {
	thread    string // its thread ("" when not known)
	codexTurn string // the Codex turn id last seen in its events
	turn      *turn  // its turn, whose Turn may still wait for its acknowledgement
}

// pendingApproval is an elicitation/create the child waits for.
type pendingApproval struct {
	childID  jsonrpcframe.ID // the child's request id
	owner    *call           // the turn it was delivered to
	answered atomic.Bool
}

// dispatch routes one message of the child.
func (b *MCPServer) dispatch(m *jsonrpcframe.Message) {
	switch {
	case m.IsResponse():
		b.handleResponse(m)
	case m.IsRequest():
		b.handleRequest(m)
	case m.IsNotification():
		if m.Method == "codex/event" {
			b.handleEvent(m)
			return
		}
		if m.Method == "notifications/tools/list_changed" {
			b.mu.Lock()
			b.tools = nil
			b.mu.Unlock()
		}
		b.toOnEvent(backend.Event{Method: m.Method, Type: m.Method, Params: m.Params, Translate: Translate})
	}
}

// routeLocked finds the call a message belongs to from its request id,
// thread id and Codex turn id ("" when unknown); b.mu is held. A live turn
// learns its thread and Codex turn ids here. When the request id is not live
// (or names a turn of another thread) the thread's running turn takes the
// message (the stale-listener case), unless the message carries the Codex
// turn id last seen under that dead request id: then it is the old turn's
// own tail (its turn_aborted, say) and belongs to nobody.
func (b *MCPServer) routeLocked(reqID jsonrpcframe.ID, threadID, turnID string) (c *call, stale bool) {
	if c = b.pending[reqID]; c != nil {
		if c.turn == nil {
			return c, false
		}
		if c.turn.threadID == "" && threadID != "" {
			c.turn.threadID = threadID
			if b.threads[threadID] == nil {
				b.threads[threadID] = c
			}
		}
		if threadID == "" || c.turn.threadID == threadID {
			if turnID != "" {
				c.turn.codexTurn = turnID
			}
			return c, false
		}
	}
	if d, ok := b.dead[reqID]; ok && turnID != "" && d.codexTurn == turnID {
		return nil, false
	}
	if threadID != "" {
		if tc := b.threads[threadID]; tc != nil {
			return tc, true
		}
	}
	return nil, false
}

// accept acknowledges the abandoned request's turn, whose Turn may still
// wait for that (awaitAccepted).
func (d deadCall) accept() {
	if t := d.turn; t != nil && t.acked != nil {
		t.mu.Lock()
		t.accept()
		t.mu.Unlock()
	}
}

// awaitAccepted is the end of a turn abandoned (interrupted, timed out)
// before the child acknowledged it: it waits, at most acceptWait, for the
// acknowledgement (an event or the result under the dead request id) or
// the child's death, so that the caller of OnAccepted learns whether Codex
// had the turn. It returns the *ExitError when the child died without
// acknowledging it.
func (b *MCPServer) awaitAccepted(acked chan struct{}) *backend.ExitError {
	b.mu.Lock()
	exited, ee := b.exitHandled, b.exitErr
	b.mu.Unlock()
	if ee == nil {
		timer := time.NewTimer(acceptWait)
		defer timer.Stop()
		select {
		case <-acked:
			return nil
		case <-exited:
		case <-timer.C:
			return nil
		}
	}
	select {
	case <-acked:
		return nil // read before the end of the child's output
	default:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exitErr
}

// forgetLocked takes a call that left pending out of threads; b.mu is
// held.
func (b *MCPServer) forgetLocked(c *call) {
	if c.turn != nil {
		if tid := c.turn.threadID; tid != "" && b.threads[tid] == c {
			delete(b.threads, tid)
		}
	}
}

// abandon ends c without the child's answer: the request id becomes dead
// (its thread tainted), the child is told with notifications/cancelled
// (except after an abort, which ended the turn already), the call's
// unanswered approvals are denied, and the caller gets its reply at once.
func (b *MCPServer) abandon(c *call, kind abandonKind) {
	b.mu.Lock()
	if !b.takeLocked(c) {
		b.mu.Unlock()
		return
	}
	var d deadCall
	if c.turn != nil {
		d = deadCall{thread: c.turn.threadID, codexTurn: c.turn.codexTurn, turn: c.turn}
	}
	b.dead[c.id] = d
	tid := d.thread
	b.mu.Unlock()
	if c.turn != nil {
		c.turn.closed.Store(true)
	}
	reason := map[abandonKind]string{abandonInterrupt: "interrupted", abandonTimeout: "timed out", abandonAbort: "aborted"}[kind]
	b.log.Info("codex request abandoned; its id is dead and its thread tainted", "id", c.id.String(), "method", c.method, "thread", tid, "why", reason)
	if kind != abandonAbort {
		n, _ := jsonrpcframe.NewNotification("notifications/cancelled", map[string]any{"requestId": c.id, "reason": reason})
		if err := b.write(n, nil); err != nil {
			b.log.Warn("codex: sending notifications/cancelled failed", "id", c.id.String(), "err", err)
		}
	}
	b.denyLeftovers(c, "the turn was "+reason)
	c.reply <- reply{abandoned: kind}
}

// denyLeftovers answers the unanswered approvals of an ended call with a
// denial, so that Codex never waits for them.
func (b *MCPServer) denyLeftovers(c *call, reason string) {
	b.mu.Lock()
	var left []*backend.Approval
	for a, pa := range b.approvals {
		if pa.owner == c {
			left = append(left, a)
		}
	}
	b.mu.Unlock()
	for _, a := range left {
		if err := a.Respond(backend.Decision{Kind: backend.Deny, Reason: reason}); err == nil {
			b.log.Info("codex approval denied because its turn ended", "approval", a.ID)
		}
	}
}

// handleResponse delivers a response to the call its id names, or (stale
// listener) to the running turn of the result's thread; otherwise it is
// dropped with a log line.
func (b *MCPServer) handleResponse(m *jsonrpcframe.Message) {
	rt := resultThread(m)
	b.mu.Lock()
	target, stale := b.routeLocked(m.ID, rt, "")
	dead, wasDead := b.dead[m.ID]
	delete(b.dead, m.ID) // Codex's listener for that id ends with this result
	if target != nil {
		b.takeLocked(target)
	}
	b.mu.Unlock()
	switch {
	case target == nil && wasDead:
		dead.accept()
		b.log.Info("codex: late result of an abandoned request dropped", "id", m.ID.String(), "thread", dead.thread, "result_thread", rt)
		return
	case target == nil:
		b.log.Warn("codex: response to no request dropped", "id", m.ID.String(), "result_thread", rt)
		return
	case stale:
		b.log.Info("codex: result under a stale request id routed to the thread's running turn", "id", m.ID.String(), "thread", rt, "turn_id", target.id.String())
	}
	if target.turn != nil {
		target.turn.accept() // a result with no event before it: read all the same
	}
	b.denyLeftovers(target, "the turn ended")
	r := reply{msg: m}
	if t := target.turn; t != nil && t.onResult != nil && m.Err() == nil {
		// The result as Turn would read it, given to OnResult here.
		b.mu.Lock()
		threadID := t.threadID
		b.mu.Unlock()
		t.mu.Lock()
		turnID := t.turnID
		t.mu.Unlock()
		if res, err := parseResult(m.Result, threadID, turnID); err == nil {
			res.Replaced = t.replaced
			r.res = res
			t.onResult(res)
		}
	}
	target.reply <- r
	handOver()
}

// handOver lets the goroutine just woken with a turn's end run at once, on
// this goroutine's processor, instead of after this reader's next read
// (a system call, then a wait in the poller): it is what the caller of the
// turn waits for, and a turn ends once per many messages.
func handOver() { runtime.Gosched() }

// handleEvent delivers a codex/event to its turn's handler, to OnEvent, or
// drops it.
func (b *MCPServer) handleEvent(m *jsonrpcframe.Message) {
	var env eventEnvelope
	if !env.scan(m.Params, &b.ids) {
		if err := json.Unmarshal(m.Params, &env); err != nil {
			b.log.Warn("codex: malformed codex/event", "err", err)
			b.toOnEvent(backend.Event{Method: m.Method, Params: m.Params, Translate: mcpActivity})
			return
		}
	}
	var reqID jsonrpcframe.ID
	if len(env.Meta.RequestID) > 0 {
		reqID, _ = jsonrpcframe.ParseID(env.Meta.RequestID)
	}
	// A codex/event: its translation is mcp-server's, named here rather
	// than found by Translate when the event is read (one call fewer per
	// event translated).
	ev := backend.Event{ThreadID: env.Meta.ThreadID, TurnID: env.Msg.TurnID, Method: m.Method, Type: env.Msg.Type, Params: m.Params, Translate: mcpActivity}
	if ev.TurnID == "" {
		ev.TurnID = env.ID
	}
	b.mu.Lock()
	target, stale := b.routeLocked(reqID, env.Meta.ThreadID, ev.TurnID)
	dead, wasDead := b.dead[reqID]
	b.mu.Unlock()
	switch {
	case target == nil:
		if wasDead {
			dead.accept() // Codex had the abandoned turn after all
		}
		b.toOnEvent(ev)
		return
	case target.turn == nil:
		ev.RequestID = target.origID
		b.toOnEvent(ev)
		return
	case stale:
		b.log.Debug("codex: event under a stale request id routed to the thread's running turn", "id", reqID.String(), "thread", ev.ThreadID, "type", ev.Type)
	}
	t := target.turn
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		b.toOnEvent(ev)
		return
	}
	if !stale {
		t.accept() // an event under the turn's own request id: Codex has the turn
		if t.onThread != nil && ev.ThreadID != "" {
			t.onThread(ev.ThreadID)
			t.onThread = nil
		}
	}
	t.observe(&env)
	if t.handler != nil {
		t.handler.Event(ev)
		b.flushes.note(t, t.handler)
	}
}

// handleRequest answers the child's own requests. elicitation/create (an
// approval) goes to the turn's handler; it is always answered with a
// decision, never with a JSON-RPC error (which would hang the turn).
func (b *MCPServer) handleRequest(m *jsonrpcframe.Message) {
	if m.Method != "elicitation/create" {
		b.log.Warn("codex: unexpected request from the child", "method", m.Method)
		b.answer(m.ID, jsonrpcframe.NewErrorResponse(m.ID, &jsonrpcframe.Error{Code: jsonrpcframe.CodeMethodNotFound, Message: "method not found: " + m.Method}))
		return
	}
	a, p, ok := approvalFromElicitation(m.Params)
	if !ok {
		b.log.Warn("codex: elicitation that is not an approval declined")
		resp, _ := jsonrpcframe.NewResponse(m.ID, map[string]any{"action": "decline"})
		b.answer(m.ID, resp)
		return
	}
	var reqID jsonrpcframe.ID
	if n, err := strconv.ParseInt(p.ToolCallID, 10, 64); err == nil {
		reqID = jsonrpcframe.IntID(n)
	}
	pa := &pendingApproval{childID: m.ID}
	b.mu.Lock()
	target, stale := b.routeLocked(reqID, a.ThreadID, "")
	b.approvalSeq++
	a.ID = fmt.Sprintf("approval-%d", b.approvalSeq)
	pa.owner = target
	var ap *backend.Approval
	ap = backend.NewApproval(a, func(d backend.Decision) error { return b.answerApproval(ap, pa, d) })
	b.approvals[ap] = pa
	b.mu.Unlock()
	switch {
	case target == nil:
		// No caller waits for this turn: end it rather than let it run on.
		b.log.Info("codex: approval of no running turn aborted", "approval", ap.ID, "thread", a.ThreadID, "tool_call_id", p.ToolCallID)
		_ = ap.Respond(backend.Decision{Kind: backend.Abort})
		return
	case target.turn == nil || target.turn.handler == nil:
		_ = ap.Respond(backend.Decision{Kind: backend.Deny, Reason: "no approval handler"})
		return
	case stale:
		b.log.Info("codex: approval under a stale request id routed to the thread's running turn", "approval", ap.ID, "thread", a.ThreadID)
	}
	t := target.turn
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		_ = ap.Respond(backend.Decision{Kind: backend.Deny, Reason: "the turn ended"})
		return
	}
	if ap.Reason == "" {
		ap.Reason = t.reason[ap.CallID]
	}
	if ap.TurnID == "" {
		ap.TurnID = t.turnID
	}
	t.handler.Approval(ap)
}

// answerApproval sends the decision for an approval, once.
func (b *MCPServer) answerApproval(a *backend.Approval, pa *pendingApproval, d backend.Decision) error {
	if !pa.answered.CompareAndSwap(false, true) {
		return backend.ErrAlreadyAnswered
	}
	b.mu.Lock()
	delete(b.approvals, a)
	version := b.version
	b.mu.Unlock()
	resp, err := jsonrpcframe.NewResponse(pa.childID, mcpDecision(version, d))
	if err != nil {
		return err
	}
	b.log.Info("codex approval answered", "approval", a.ID, "kind", string(a.Kind), "decision", string(d.Kind))
	err = b.write(resp, nil)
	if d.Kind == backend.Abort && pa.owner != nil {
		// Codex aborts the turn and never answers its tools/call.
		b.abandon(pa.owner, abandonAbort)
	}
	return err
}
