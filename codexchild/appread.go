package codexchild

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// This file is the reader side of AppServer: one goroutine per child reads
// its stdout and routes responses to the calls waiting for them,
// notifications to the turn of their thread (or Config.OnEvent), and the
// child's requests to approvals or to the backend's own answers.

// appApproval is an approval request the child waits for.
type appApproval struct {
	childID  jsonrpcframe.ID
	method   string
	owner    *appTurn // nil when it belongs to no running turn
	answered atomic.Bool
}

// exitLocked empties the turns and approvals when the child has exited
// (b.mu is held); the turns end once the pending calls have failed.
func (b *AppServer) exitLocked(ee *backend.ExitError) func() {
	turns := make([]*appTurn, 0, len(b.turns))
	for _, t := range b.turns {
		t.err = ee
		turns = append(turns, t)
	}
	clear(b.turns)
	clear(b.subs)
	clear(b.approvals)
	if len(turns) > 0 {
		b.log.Info("codex turns ended by the child's exit", "turns", len(turns))
	}
	return func() {
		for _, t := range turns {
			t.closed.Store(true)
			t.finish()
		}
	}
}

// dispatch handles one message of the child, on the reader goroutine.
func (b *AppServer) dispatch(m *jsonrpcframe.Message) {
	if m.Versioned && !b.versioned.Load() {
		b.versioned.Store(true)
	}
	switch {
	case m.IsResponse():
		b.handleResponse(m)
	case m.IsRequest():
		b.handleRequest(m)
	case m.IsNotification():
		b.handleNotification(m)
	}
}

// handleResponse delivers a response to the call its id names. The response
// to turn/start is handled here for the turn: its id is recorded (and a
// deferred turn/interrupt sent), or its error ends the turn.
func (b *AppServer) handleResponse(m *jsonrpcframe.Message) {
	b.mu.Lock()
	c, _ := b.popLocked(m.ID)
	b.mu.Unlock()
	switch {
	case c == nil:
		b.log.Warn("codex: response to no request dropped", "id", m.ID.String())
	case c.turn != nil:
		b.turnStarted(c.turn, m)
	case c.reply != nil:
		c.reply <- appReply{msg: m}
	case m.Err() != nil:
		b.log.Info("codex refused a request", "method", c.method, "err", m.Err().Message)
	}
}

// turnStarted handles the response to a turn's turn/start.
func (b *AppServer) turnStarted(t *appTurn, m *jsonrpcframe.Message) {
	if e := m.Err(); e != nil {
		b.mu.Lock()
		t.startErr, t.startErrRaw = e, m.Error
		if b.turns[t.threadID] == t {
			delete(b.turns, t.threadID)
		}
		b.mu.Unlock()
		b.log.Info("codex refused turn/start", "thread", t.threadID, "err", e.Message)
		if !t.resumable || !isThreadNotFound(e) {
			t.accept() // a refusal is an answer; "thread not found" is retried after a resume
		}
		t.finish()
		return
	}
	t.accept()
	var r struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(m.Result, &r)
	b.mu.Lock()
	t.setTurnIDLocked(r.Turn.ID)
	send := t.abandoned != notAbandoned && !t.interruptSent && t.turnID != ""
	if send {
		t.interruptSent = true
	}
	b.mu.Unlock()
	if send {
		b.sendInterrupt(t.threadID, t.turnID)
	}
}

// eventIDs reads the thread and turn ids of a notification: threadId (or
// thread.id) and turnId (or turn.id).
func eventIDs(params json.RawMessage) (threadID, turnID string) {
	var p struct {
		ThreadID string `json:"threadId"`
		TurnID   string `json:"turnId"`
		Thread   *struct {
			ID string `json:"id"`
		} `json:"thread"`
		Turn *struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", ""
	}
	threadID, turnID = p.ThreadID, p.TurnID
	if threadID == "" && p.Thread != nil {
		threadID = p.Thread.ID
	}
	if turnID == "" && p.Turn != nil {
		turnID = p.Turn.ID
	}
	return threadID, turnID
}

// turnOfLocked returns the turn of a thread that a message with turnID
// belongs to (running or abandoned); b.mu is held. Before the turn/start
// response has told the turn's id, every message of the thread is taken
// (the id is not adopted from them: after thread/resume, Codex sends a
// thread/tokenUsage/updated naming the previous turn), except that
// turn/started (adopt) names it.
func (b *AppServer) turnOfLocked(threadID, turnID string, adopt bool) *appTurn {
	t := b.turns[threadID]
	if t == nil {
		return nil
	}
	if turnID != "" {
		if t.turnID == "" && adopt {
			t.setTurnIDLocked(turnID)
		} else if t.turnID != "" && t.turnID != turnID {
			return nil
		}
	}
	return t
}

// handleNotification delivers a notification to its turn's handler, or to
// OnEvent when it belongs to no running turn. turn/completed ends its turn.
func (b *AppServer) handleNotification(m *jsonrpcframe.Message) {
	threadID, turnID := eventIDs(m.Params)
	ev := backend.Event{ThreadID: threadID, TurnID: turnID, Method: m.Method, Type: m.Method, Params: m.Params, Translate: appActivity}
	if m.Method == "codex/event" {
		ev.Translate = mcpActivity // as Translate would choose, once here rather than at each read
	}
	var t, root *appTurn
	var subsChanged []*subAgent
	completed, waitSubs, rootDone, stopped := false, false, false, false
	stopTurn := "" // a sub-agent's turn to interrupt as it starts
	if threadID != "" {
		b.mu.Lock()
		t = b.turnOfLocked(threadID, turnID, m.Method == "turn/started")
		switch {
		case t != nil:
			if t.completed == nil {
				b.collabLocked(t, m.Method, m.Params)
			}
		default:
			if stopTurn, stopped = b.stoppedSubAgentLocked(threadID, m.Method, m.Params); !stopped {
				root, subsChanged, rootDone = b.subAgentEventLocked(threadID, m.Method, m.Params)
			}
		}
		if t != nil && t.completed == nil && m.Method == "turn/completed" {
			completed = true
			t.completed = m.Params
			// A turn whose sub-agents still run stays, ended in Codex, until
			// they end (appsubagents.go).
			if waitSubs = t.abandoned == notAbandoned && pendingSubAgentsLocked(t); waitSubs {
				t.subWait = true
			} else {
				delete(b.turns, threadID)
			}
		}
		b.mu.Unlock()
	}
	if t == nil {
		b.toOnEvent(ev)
		if stopTurn != "" {
			b.log.Info("codex sub-agent of an interrupted turn started; interrupting it", "thread", threadID, "turn", stopTurn)
			b.sendInterrupt(threadID, stopTurn)
		}
		if root != nil {
			b.tellSubAgents(root, subsChanged)
			if rootDone {
				root.finish()
			}
		}
		return
	}
	if ev.TurnID == "" {
		b.mu.Lock()
		ev.TurnID = t.turnID
		b.mu.Unlock()
	}
	if m.Method == "turn/started" {
		// The turn's start carries the model its thread/start or
		// thread/resume answer named (Activity.Model).
		b.mu.Lock()
		model := b.models[threadID]
		b.mu.Unlock()
		if model != "" {
			ev.Neutral = &backend.Activity{Kind: backend.ActivityTurnStarted, Model: model}
		}
	}
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		b.toOnEvent(ev)
	} else {
		t.observe(m.Method, m.Params)
		if t.handler != nil {
			t.handler.Event(ev)
			b.flushes.note(t, t.handler)
		}
		t.mu.Unlock()
	}
	if completed {
		b.answerLeftovers(t, backend.Decision{Kind: backend.Deny, Reason: "the turn ended", TurnEnds: true})
		if waitSubs {
			close(t.codexEnd)
		} else {
			t.finish()
		}
		handOver()
	}
}

// observe updates the turn's state from one of its notifications; t.mu is
// held.
func (t *appTurn) observe(method string, params json.RawMessage) {
	switch method {
	case "item/agentMessage/delta":
		var p struct {
			Delta string `json:"delta"`
		}
		if json.Unmarshal(params, &p) == nil {
			t.delta.WriteString(p.Delta)
		}
	case "item/started", "item/completed":
		var p struct {
			Item struct {
				Type    string          `json:"type"`
				ID      string          `json:"id"`
				Text    string          `json:"text"`
				Changes json.RawMessage `json:"changes"`
			} `json:"item"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		switch {
		case p.Item.Type == "agentMessage" && method == "item/completed":
			t.texts = append(t.texts, p.Item.Text)
			t.delta.Reset()
		case p.Item.Type == "fileChange" && len(p.Item.Changes) > 0 && string(p.Item.Changes) != "null":
			if t.changes == nil {
				t.changes = map[string]json.RawMessage{}
			}
			t.changes[p.Item.ID] = p.Item.Changes
		}
	case "error":
		var p struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(params, &p) == nil && p.Error.Message != "" {
			t.errMsg = p.Error.Message
		}
	}
}

// handleRequest answers the child's own requests: approvals go to the turn's
// handler as typed Approvals; every other request is answered at once (see
// otherRequestAnswer). No request is left unanswered.
func (b *AppServer) handleRequest(m *jsonrpcframe.Message) {
	a, ok := approvalFromAppRequest(m.Method, m.Params)
	if !ok {
		resp := otherRequestAnswer(m)
		b.log.Warn("codex: request the proxy cannot serve answered", "method", m.Method, "answer", string(resp.Result)+string(resp.Error))
		b.answer(m.ID, resp)
		return
	}
	pa := &appApproval{childID: m.ID, method: m.Method}
	b.mu.Lock()
	t := b.turnOfLocked(a.ThreadID, a.TurnID, false)
	if sa := b.subs[a.ThreadID]; t == nil && sa != nil && !sa.stop {
		t = sa.root // a sub-agent's approval is its root turn's to answer (one being interrupted: nobody's)
		if a.TurnID == "" {
			a.TurnID = sa.turnID
		}
	}
	if t != nil && t.abandoned != notAbandoned {
		t = nil
	}
	b.approvalSeq++
	a.ID = fmt.Sprintf("approval-%d", b.approvalSeq)
	if a.TurnID == "" && t != nil {
		a.TurnID = t.turnID
	}
	pa.owner = t
	var ap *backend.Approval
	ap = backend.NewApproval(a, func(d backend.Decision) error { return b.answerApproval(ap, pa, d) })
	b.approvals[ap] = pa
	b.mu.Unlock()
	switch {
	case t == nil:
		// Nobody waits for this turn: end it rather than let it run on.
		b.log.Info("codex: approval of no running turn cancelled", "approval", ap.ID, "thread", a.ThreadID, "method", m.Method)
		_ = ap.Respond(backend.Decision{Kind: backend.Abort})
		return
	case t.handler == nil:
		_ = ap.Respond(backend.Decision{Kind: backend.Deny, Reason: "no approval handler"})
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		_ = ap.Respond(backend.Decision{Kind: backend.Deny, Reason: "the turn ended", TurnEnds: true})
		return
	}
	if ap.Kind == backend.ApprovalPatch && ap.Changes == nil {
		ap.Changes = t.changes[ap.CallID]
	}
	t.handler.Approval(ap)
}

// answerApproval sends the decision for an approval, once.
func (b *AppServer) answerApproval(a *backend.Approval, pa *appApproval, d backend.Decision) error {
	if !pa.answered.CompareAndSwap(false, true) {
		return backend.ErrAlreadyAnswered
	}
	b.mu.Lock()
	delete(b.approvals, a)
	if d.Kind == backend.Abort && pa.owner != nil {
		pa.owner.aborted = true
	}
	// A turn that goes on is told why (denialnote.go); one that ended or is
	// being stopped is not.
	goesOn := pa.owner != nil && pa.owner.completed == nil && pa.owner.abandoned == notAbandoned
	b.mu.Unlock()
	resp, err := jsonrpcframe.NewResponse(pa.childID, appDecision(pa.method, d))
	if err != nil {
		return err
	}
	b.log.Info("codex approval answered", "approval", a.ID, "kind", string(a.Kind), "decision", string(d.Kind))
	legacy := pa.method == "execCommandApproval" || pa.method == "applyPatchApproval"
	if note := backend.DenialNote(a, d); note != "" && !legacy && goesOn {
		// The v2 decline has no reason: the turn is steered with it first,
		// so that the model reads it with the tool's output (the turn
		// cannot end before the decline). Not on the caller's goroutine,
		// which may be this backend's reader; Close waits for it.
		if !b.background(func() {
			b.tellDenial(a.ThreadID, note)
			if err := b.write(resp, nil); err != nil {
				b.log.Warn("codex: the decline could not be written", "approval", a.ID, "err", err)
			}
		}) {
			return backend.ErrClosed
		}
		return nil
	}
	return b.write(resp, nil)
}

// answerLeftovers answers the unanswered approvals of a turn with d.
func (b *AppServer) answerLeftovers(t *appTurn, d backend.Decision) {
	b.mu.Lock()
	var left []*backend.Approval
	for a, pa := range b.approvals {
		// A turn that waits for its sub-agents keeps their approvals open.
		if pa.owner == t && !(t.subWait && a.ThreadID != t.threadID) {
			left = append(left, a)
		}
	}
	b.mu.Unlock()
	for _, a := range left {
		if err := a.Respond(d); err == nil {
			b.log.Info("codex approval answered because its turn ended", "approval", a.ID, "decision", string(d.Kind))
		}
	}
}
