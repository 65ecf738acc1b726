package codexchild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// This file is how AppServer keeps track of the sub-agents Codex's agent
// starts of its own (its collab tools: spawn_agent, wait, close_agent),
// so that a turn is done only when they are.
//
// Measured on 0.171.0: the parent's collabAgentToolCall item (tool
// spawnAgent) names the new thread in receiverThreadIds; the sub-agent
// then runs turns of its own on that thread, whose turn/started carries the
// parent turn's id as rootTurnId; the parent's turn/completed may come
// while they still run (Multica turned multi-agent mode off for that).
// So the reader notes every sub-agent under the turn that started it (a
// sub-agent's own sub-agents too), follows its state (its turn/started,
// turn/completed, thread/closed, and the states the parent's collab items
// report), tells the turn's handler of each change (an event of the
// parent's thread whose Activity lists the sub-agent), and holds the
// turn's end back until every one has finished or been closed, or until
// Config.SubAgentWait has passed. An Interrupt (or the Turn's ctx) of the
// turn, before its end in Codex or during that wait, interrupts them: the
// running ones at once, the ones whose turn has not started yet when it
// does (subAgent.stop).

// subAgentMethod is the Method (and Type) of the events that tell a turn's
// handler of a change of one of its sub-agents; their Params are the
// SubAgent as JSON and their Neutral activity an item of type "sub_agent"
// with the sub-agent in SubAgents. Codex sends no such notification: the
// backend makes it.
const subAgentMethod = "codexchild/subAgent"

// subAgent is one sub-agent of a running turn; guarded by AppServer.mu.
type subAgent struct {
	root   *appTurn // the turn whose end waits for it
	info   backend.SubAgent
	turnID string // its running turn, for turn/interrupt
	// stop: its root was interrupted before its turn started; it stays in
	// AppServer.subs, its root gone, until that turn has been interrupted
	// and has ended (stoppedSubAgentLocked).
	stop bool
}

// finalSubAgent reports whether a sub-agent state is an end: it has
// finished (completed, errored, interrupted), been closed (shutdown) or is
// gone (notFound).
func finalSubAgent(status string) bool {
	switch status {
	case "completed", "errored", "interrupted", "shutdown", "notFound":
		return true
	}
	return false
}

// setStatus changes the sub-agent's state and reports whether it changed.
// States the parent's collab items report only move it forward (pending,
// running, an end): such an item may tell of an older state than the
// sub-agent's own events did. Its own events (own) set any state.
func (s *subAgent) setStatus(status, message string, own bool) bool {
	if status == "" || status == s.info.Status && message == "" {
		return false
	}
	rank := func(st string) int {
		switch {
		case st == "" || st == "pendingInit":
			return 0
		case finalSubAgent(st):
			return 2
		}
		return 1
	}
	if !own && rank(status) < rank(s.info.Status) {
		return false
	}
	s.info.Status = status
	if message != "" {
		s.info.Message = clip(message, 200)
	}
	return true
}

// collabItem is the part of a collabAgentToolCall item the tracking reads.
type collabItem struct {
	Item struct {
		Type string `json:"type"`
		Tool string `json:"tool"`
		collabFields
	} `json:"item"`
}

// collabFields are the members of a collabAgentToolCall item (Codex's own
// sub-agents) that the tracking and the activity read: who sent it, the
// prompt, the sub-agents it reaches and their states.
type collabFields struct {
	Sender       string   `json:"senderThreadId"`
	Prompt       string   `json:"prompt"`
	Receivers    []string `json:"receiverThreadIds"`
	AgentsStates map[string]struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"agentsStates"`
}

// collabLocked notes what a collab item of root's turn (or of one of its
// sub-agents) tells: new sub-agents and their states. It returns the
// sub-agents that changed; b.mu is held.
func (b *AppServer) collabLocked(root *appTurn, method string, params json.RawMessage) []*subAgent {
	if method != "item/started" && method != "item/completed" || !bytes.Contains(params, []byte(`"collabAgentToolCall"`)) {
		return nil
	}
	var c collabItem
	if json.Unmarshal(params, &c) != nil || c.Item.Type != "collabAgentToolCall" {
		return nil
	}
	var changed []*subAgent
	note := func(id string) {
		st := c.Item.AgentsStates[id]
		sa := b.subs[id]
		if sa == nil {
			sa = &subAgent{root: root, info: backend.SubAgent{ThreadID: id, Status: "pendingInit"}}
			b.subs[id] = sa
			root.subs = append(root.subs, sa)
			changed = append(changed, sa)
		}
		if sa.root != root {
			return
		}
		if c.Item.Tool == "spawnAgent" {
			sa.info.ParentThreadID = c.Item.Sender
			if sa.info.Task == "" {
				sa.info.Task = clip(c.Item.Prompt, 200)
			}
		}
		if sa.setStatus(st.Status, st.Message, false) && (len(changed) == 0 || changed[len(changed)-1] != sa) {
			changed = append(changed, sa)
		}
	}
	for _, id := range c.Item.Receivers {
		note(id)
	}
	for id := range c.Item.AgentsStates {
		if b.subs[id] != nil {
			note(id) // a state of one that is known already
		}
	}
	return changed
}

// subAgentEventLocked follows a notification of a thread that has no
// running turn of its own: when it is a sub-agent's (or its turn/started
// names a running turn as its root), its state changes (turn/started:
// running; turn/completed: completed, errored or interrupted;
// thread/closed: shutdown) and its collab items note its own sub-agents.
// It returns the root turn and the sub-agents that changed, and whether
// the root's end, held back for its sub-agents, may come now; b.mu is
// held.
func (b *AppServer) subAgentEventLocked(threadID, method string, params json.RawMessage) (root *appTurn, changed []*subAgent, rootDone bool) {
	sa := b.subs[threadID]
	if sa == nil && method == "turn/started" {
		var p struct {
			Turn struct {
				RootTurnID string `json:"rootTurnId"`
			} `json:"turn"`
		}
		if json.Unmarshal(params, &p) == nil && p.Turn.RootTurnID != "" {
			for _, t := range b.turns {
				if t.turnID == p.Turn.RootTurnID && t.threadID != threadID {
					sa = &subAgent{root: t, info: backend.SubAgent{ThreadID: threadID, Status: "pendingInit"}}
					b.subs[threadID] = sa
					t.subs = append(t.subs, sa)
					break
				}
			}
		}
	}
	if sa == nil {
		return nil, nil, false
	}
	root = sa.root
	switch method {
	case "turn/started":
		_, sa.turnID = eventIDs(params)
		if sa.setStatus("running", "", true) {
			changed = append(changed, sa)
		}
	case "turn/completed":
		var tc turnCompleted
		_ = json.Unmarshal(params, &tc)
		status := map[string]string{"completed": "completed", "interrupted": "interrupted"}[tc.Turn.Status]
		if status == "" {
			status = "errored"
		}
		msg := ""
		if tc.Turn.Error != nil {
			msg = tc.Turn.Error.Message
		}
		sa.turnID = ""
		if sa.setStatus(status, msg, true) {
			changed = append(changed, sa)
		}
	case "thread/closed":
		if sa.setStatus("shutdown", "", true) {
			changed = append(changed, sa)
		}
	default:
		changed = b.collabLocked(root, method, params)
	}
	if root.subWait && !pendingSubAgentsLocked(root) {
		rootDone = true
		if b.turns[root.threadID] == root {
			delete(b.turns, root.threadID)
		}
	}
	return root, changed, rootDone
}

// stoppedSubAgentLocked follows a notification of a sub-agent whose root
// was interrupted before the sub-agent's turn started (subAgent.stop): it
// returns that turn's id when the notification is its turn/started (the
// caller sends turn/interrupt), and forgets the sub-agent once it has
// ended. handled says whether the thread is such a sub-agent's; b.mu is
// held.
func (b *AppServer) stoppedSubAgentLocked(threadID, method string, params json.RawMessage) (interrupt string, handled bool) {
	sa := b.subs[threadID]
	if sa == nil || !sa.stop {
		return "", false
	}
	switch method {
	case "turn/started":
		_, interrupt = eventIDs(params)
	case "turn/completed", "thread/closed":
		delete(b.subs, threadID)
	}
	return interrupt, true
}

// pendingSubAgentsLocked reports whether a sub-agent of t has not ended;
// b.mu is held.
func pendingSubAgentsLocked(t *appTurn) bool {
	for _, sa := range t.subs {
		if !finalSubAgent(sa.info.Status) {
			return true
		}
	}
	return false
}

// tellSubAgents tells root's handler of the sub-agents that changed (see
// subAgentMethod), unless its Turn has returned.
func (b *AppServer) tellSubAgents(root *appTurn, changed []*subAgent) {
	if len(changed) == 0 {
		return
	}
	b.mu.Lock()
	turnID := root.turnID
	infos := make([]backend.SubAgent, len(changed))
	for i, sa := range changed {
		infos[i] = sa.info
	}
	b.mu.Unlock()
	root.mu.Lock()
	defer root.mu.Unlock()
	if root.closed.Load() || root.handler == nil {
		return
	}
	for _, info := range infos {
		params, _ := json.Marshal(info)
		summary := "sub-agent"
		if info.Task != "" {
			summary += ": " + clip(info.Task, 60)
		}
		act := &backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: info.ThreadID, Type: "sub_agent", Status: info.Status, Summary: summary},
			SubAgents: []backend.SubAgent{info}}
		root.handler.Event(backend.Event{ThreadID: root.threadID, TurnID: turnID, Method: subAgentMethod, Type: subAgentMethod, Params: params, Neutral: act})
	}
	b.flushes.note(root, root.handler)
}

// How the wait of a turn for its sub-agents ended.
type subWaitEnd int

const (
	subsDone        subWaitEnd = iota // every one ended
	subsWaitPassed                    // Config.SubAgentWait passed
	subsTimeout                       // the turn's timeout passed
	subsInterrupted                   // Interrupt
	subsCancelled                     // the Turn's ctx
	subsExited                        // the child died
)

// subWait is how the wait of a turn for its sub-agents ended, and how many
// of them had not ended then.
type subWait struct {
	end     subWaitEnd
	pending int
}

// waitSubAgents waits, once t has ended in Codex, for its sub-agents to
// end, at most Config.SubAgentWait. An Interrupt or the Turn's ctx stops
// the wait and interrupts the sub-agents that still run (endSubWait).
func (b *AppServer) waitSubAgents(ctx, tctx context.Context, t *appTurn) subWait {
	wait := b.cfg.subAgentWait()
	b.log.Info("codex turn ended; waiting for its sub-agents", "thread", t.threadID, "at_most", wait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	end := subsDone
	select {
	case <-t.done:
		b.mu.Lock()
		if t.err != nil {
			end = subsExited
		}
		b.mu.Unlock()
	case <-timer.C:
		end = subsWaitPassed
	case <-t.stop:
		end = subsInterrupted
	case <-tctx.Done():
		end = subsTimeout
		if ctx.Err() != nil {
			end = subsCancelled
		}
	}
	return b.endSubWait(t, end)
}

// endSubWait counts t's sub-agents that have not ended as its wait for
// them ends (or as it is interrupted before its end in Codex); an
// Interrupt or the Turn's ctx (end) interrupts them: turn/interrupt for
// the running ones, and for the others their turn as soon as it starts
// (subAgent.stop).
func (b *AppServer) endSubWait(t *appTurn, end subWaitEnd) subWait {
	stop := end == subsInterrupted || end == subsCancelled
	b.mu.Lock()
	pending := 0
	var running []*subAgent
	for _, sa := range t.subs {
		if finalSubAgent(sa.info.Status) {
			continue
		}
		pending++
		switch {
		case !stop:
		case sa.turnID != "":
			running = append(running, &subAgent{info: sa.info, turnID: sa.turnID})
		case b.subs[sa.info.ThreadID] == sa:
			sa.stop = true
		}
	}
	b.mu.Unlock()
	if stop && pending > 0 {
		b.log.Info("codex turn interrupted; interrupting its sub-agents", "thread", t.threadID, "running", len(running), "not_started", pending-len(running))
	}
	for _, sa := range running {
		b.sendInterrupt(sa.info.ThreadID, sa.turnID)
	}
	return subWait{end, pending}
}

// subAgentsResult puts t's sub-agents into its Result and drops them from
// the tracking (except the ones whose turn is to be interrupted when it
// starts); when t waited for them in the turns map (waited), it leaves. A
// wait or Interrupt (w) that ended with some of them still running says
// so (an interrupt or ctx makes the Result an interrupted one, its answer
// kept as Partial).
func (b *AppServer) subAgentsResult(t *appTurn, res *backend.Result, w subWait, waited bool) {
	b.mu.Lock()
	if waited {
		// It stayed, ended in Codex, for the wait (an abandoned turn stays
		// until Codex ends it: not this one).
		if b.turns[t.threadID] == t {
			delete(b.turns, t.threadID)
		}
		t.subWait = false // its sub-agents' approvals are answered below
	}
	var infos []backend.SubAgent
	for _, sa := range t.subs {
		infos = append(infos, sa.info)
		if b.subs[sa.info.ThreadID] == sa && !sa.stop {
			delete(b.subs, sa.info.ThreadID)
		}
	}
	b.mu.Unlock()
	if waited {
		b.answerLeftovers(t, backend.Decision{Kind: backend.Deny, Reason: "the turn ended", TurnEnds: true})
	}
	if res == nil || len(infos) == 0 {
		return
	}
	res.SubAgents = infos
	if w.end == subsDone || w.pending == 0 {
		return
	}
	of := fmt.Sprintf("%d of %d sub-agents", w.pending, len(infos))
	if len(infos) == 1 {
		of = "its sub-agent"
	}
	switch w.end {
	case subsWaitPassed:
		res.SubAgentsNote = fmt.Sprintf("%s still running after waiting %s for them", of, b.cfg.subAgentWait())
	case subsTimeout:
		res.SubAgentsNote = fmt.Sprintf("%s still running when the turn's timeout passed", of)
	case subsExited:
		res.SubAgentsNote = fmt.Sprintf("%s still running when the codex child exited", of)
	case subsInterrupted, subsCancelled:
		res.SubAgentsNote = fmt.Sprintf("%s interrupted: the turn was interrupted while they ran", of)
		if !res.IsError {
			res.Partial, res.Text = res.Text, "codex turn interrupted while its sub-agents ran"
			res.IsError, res.Status = true, "interrupted"
		}
	}
}
