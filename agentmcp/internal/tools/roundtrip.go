package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// A modern client (MCP 2026-07-28) cannot be sent requests: a codex or
// codex-reply whose turn waits on an approval answers with an
// input_required result that carries the approval's form and a
// requestState, and the turn goes on. The client calls the tool again with
// the same arguments, its answer in inputResponses and the requestState;
// that call answers Codex and goes on waiting for the same turn (or the
// next approval). It never starts a turn.
//
// A requestState is a random token the proxy issued for one approval of
// one session's turn, good for one answer: a forged one, one already used
// and one whose approval was answered otherwise or timed out (no retry
// within elicitation_timeout_secs is a denial) get a clear error and answer
// nothing.

// rtTurn is one foreground turn a modern client waits for across its
// calls; it is the turn's session.Asker.
type rtTurn struct {
	rt      *roundTrips
	tool    string // codex or codex-reply
	agentID string
	h       *session.Handle
	asks    chan *rtAsk
	call    atomic.Pointer[mcpconn.ToolCall] // the call waiting now
}

// rtAsk is one approval put to the client; the retry answers it with
// q.Offer.
type rtAsk struct {
	q session.Question
	// guarded by roundTrips.mu:
	state string        // set when put in a result
	over  bool          // Ask returned: answered otherwise, timed out
	why   error         // what ended its Ask (context.Cause)
	done  chan struct{} // closed when its Ask returned (over)
}

// CanAsk reports true: the client declared elicitation.
func (t *rtTurn) CanAsk() bool { return true }

// Ask hands the approval to the call waiting for the turn (or the next
// one), whose result asks the client; the retry answers it with q.Offer.
// Ask returns when the approval has been answered, by the retry or
// otherwise (timed out, agent_respond, closing): ctx ends then.
func (t *rtTurn) Ask(ctx context.Context, q session.Question) (session.Answer, error) {
	a := &rtAsk{q: q, done: make(chan struct{})}
	select {
	case t.asks <- a:
	case <-ctx.Done():
		return session.Answer{}, ctx.Err()
	}
	<-ctx.Done()
	t.rt.over(a, context.Cause(ctx))
	return session.Answer{}, ctx.Err()
}

// callRef is the turn's CallRef: the call waiting now names the turn's
// events and gets its progress.
func (t *rtTurn) RequestID() json.RawMessage { return t.call.Load().RawID }
func (t *rtTurn) Progress(msg string)        { t.call.Load().Progress.Send(msg) }
func (t *rtTurn) WantsProgress() bool        { return t.call.Load().Progress != nil }
func (t *rtTurn) Release()                   { t.call.Load().Release() }
func (t *rtTurn) TryReplyNow(*session.TurnResult, func()) bool {
	return false
}

// roundTrips are the requestStates issued and not yet answered, and
// those spent lately (for a clear error).
type roundTrips struct {
	mu     sync.Mutex
	states map[string]*rtState
	spent  map[string]string // requestState → why it is no longer good
	order  []string          // spent, oldest first (bounded)
}

type rtState struct {
	t *rtTurn
	a *rtAsk
}

// maxSpent bounds the spent requestStates remembered.
const maxSpent = 1024

func newRoundTrips() *roundTrips {
	return &roundTrips{states: map[string]*rtState{}, spent: map[string]string{}}
}

// issue gives a a new requestState; false when a is over already (there
// is nothing left to ask).
func (r *roundTrips) issue(t *rtTurn, a *rtAsk) bool {
	var b [16]byte
	_, _ = rand.Read(b[:])
	st := "rs-" + hex.EncodeToString(b[:])
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.over {
		return false
	}
	a.state = st
	r.states[st] = &rtState{t: t, a: a}
	return true
}

// over records that a's Ask returned without a retry's answer (why: its
// context's cause, a *session.AnsweredError when it was answered): its
// requestState, if it has one, is spent.
func (r *roundTrips) over(a *rtAsk, why error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a.over, a.why = true, why
	close(a.done)
	if _, ok := r.states[a.state]; !ok {
		return
	}
	delete(r.states, a.state)
	r.spendLocked(a.state, expired(a))
}

// expired is why the requestState of an approval answered without its
// retry is no longer good: how it was answered, when the session said.
// a.why is guarded by roundTrips.mu.
func expired(a *rtAsk) string {
	var ae *session.AnsweredError
	if errors.As(a.why, &ae) && ae.Outcome != "" {
		return "approval " + a.q.ApprovalID + " was answered before this retry (" + ae.Outcome + "; the first answer wins)"
	}
	return "approval " + a.q.ApprovalID + " was answered otherwise or timed out (a denial) before this retry"
}

func (r *roundTrips) spendLocked(st, why string) {
	r.spent[st] = why
	r.order = append(r.order, st)
	if len(r.order) > maxSpent {
		delete(r.spent, r.order[0])
		r.order = r.order[1:]
	}
}

// take checks a retry against its requestState and returns the state's
// turn and approval, with the answer the retry gives (nil when the retry
// does not answer it: the client is asked again). The state is spent only
// when answered; a retry that does not fit it leaves it as it was.
func (r *roundTrips) take(c *mcpconn.ToolCall) (*rtState, *session.Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.states[c.RequestState]
	if !ok {
		if why, spent := r.spent[c.RequestState]; spent {
			return nil, nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "requestState"},
				"requestState is no longer good: %s; the turn goes on without this call (agent_wait or agent_status tell how it ends)", why)
		}
		return nil, nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "requestState"},
			"requestState %q was not issued by this server (or not since it started); call the tool without it", clip(c.RequestState, 40))
	}
	if c.Name != st.t.tool {
		return nil, nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "requestState"},
			"requestState belongs to a %s call, not to %s", st.t.tool, c.Name)
	}
	if id, _ := c.Args.Str("agent_id"); id != "" && id != st.t.agentID {
		return nil, nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "requestState"},
			"requestState belongs to session %s, not to %s", st.t.agentID, id)
	}
	var responses map[string]json.RawMessage
	if len(c.InputResponses) > 0 {
		if err := json.Unmarshal(c.InputResponses, &responses); err != nil {
			return nil, nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "inputResponses"}, "inputResponses: %v", err)
		}
	}
	raw, ok := responses[st.a.q.ApprovalID]
	if !ok {
		return st, nil, nil
	}
	var probe struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Action == "" {
		return nil, nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "inputResponses"},
			"inputResponses[%q] is not an elicitation result ({\"action\": accept, decline or cancel})", st.a.q.ApprovalID)
	}
	an := session.ElicitAnswer(raw)
	delete(r.states, c.RequestState)
	r.spendLocked(c.RequestState, "it was answered already")
	return st, &an, nil
}

// inputRequired is the result that asks the client about a.
func inputRequired(a *rtAsk) *mcpconn.ToolResult {
	form := session.ApprovalForm(a.q)
	form["mode"] = "form" // required in 2026-07-28
	return &mcpconn.ToolResult{Input: &mcpconn.InputRequired{State: a.state, Requests: map[string]mcpconn.InputRequest{
		a.q.ApprovalID: {Method: "elicitation/create", Params: form},
	}}}
}

// runRoundTrip runs t on s for a modern client that can be asked: it waits
// for the turn like Run, but an approval returns an input_required result
// while the turn goes on.
func (e *Env) runRoundTrip(ctx context.Context, c *mcpconn.ToolCall, s *session.Session, t session.Turn) (*mcpconn.ToolResult, error) {
	mcpconn.Release(ctx)
	rt := &rtTurn{rt: e.rt, tool: c.Name, agentID: s.Record().AgentID, asks: make(chan *rtAsk)}
	rt.call.Store(c)
	t.Call, t.Asker = rt, rt
	h, err := s.Start(t)
	if err != nil {
		return nil, err
	}
	rt.h = h
	return e.await(ctx, c, rt)
}

// retry is a modern client's call again with the answer to an approval:
// Codex is answered and the call waits for the same turn.
func (e *Env) retry(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	mcpconn.Release(ctx)
	st, an, err := e.rt.take(c)
	if err != nil {
		return nil, err
	}
	if an == nil {
		e.log.Info("retry without an answer to its approval; asking again", "agent_id", st.t.agentID, "approval_id", st.a.q.ApprovalID)
		return inputRequired(st.a), nil
	}
	if st.a.q.Offer == nil || !st.a.q.Offer(*an) {
		// Answered another way just now: its Ask learns how at once.
		select {
		case <-st.a.done:
		case <-time.After(time.Second):
		}
		e.rt.mu.Lock()
		why := expired(st.a)
		e.rt.mu.Unlock()
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "requestState"},
			"requestState is no longer good: %s; the turn goes on without this call (agent_wait or agent_status tell how it ends)", why)
	}
	return e.await(ctx, c, st.t)
}

// await waits for the turn's end or its next approval. The client's
// cancelling this call interrupts the turn, as it does a turn run by Run;
// an approval returns input_required and leaves the turn running.
func (e *Env) await(ctx context.Context, c *mcpconn.ToolCall, t *rtTurn) (*mcpconn.ToolResult, error) {
	t.call.Store(c)
	stop := context.AfterFunc(ctx, t.h.Cancel)
	defer stop()
	defer e.keepAlive(c, e.m.Get(t.agentID))()
	for {
		select {
		case <-t.h.Done():
			res, err := t.h.Result()
			if err != nil {
				return nil, err
			}
			return turnResult(res), nil
		case a := <-t.asks:
			if e.rt.issue(t, a) {
				return inputRequired(a), nil
			}
		}
	}
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
