package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
)

// TurnRequest is one turn.
type TurnRequest struct {
	// Text is the prompt, sent as one text content block.
	Text string
	// Timeout bounds the turn: when it runs out the turn is interrupted
	// (as Interrupt) and Prompt returns its result with a *TimeoutError.
	// optional: 0 means Config.TurnTimeout; negative means none.
	Timeout time.Duration
	// OnSent is called once the prompt has been written to the agent's
	// stdin (the turn is then running), on the goroutine calling Prompt;
	// not when the write fails. optional.
	OnSent func()
}

// TurnResult is how a turn ended.
type TurnResult struct {
	SessionID string
	Turn      int64
	// StopReason is what the agent answered (end_turn, max_tokens,
	// max_turn_requests, refusal, cancelled, or anything else it sent).
	StopReason StopReason
	// Cancelled reports that the client sent session/cancel during the
	// turn, whatever StopReason says (Copilot answers a cancel with
	// end_turn; some agents answer it with an error).
	Cancelled bool
	// AfterCancel reports that the session's previous turn was cancelled.
	// Its output may then not be this turn's own: claude-agent-acp 0.101.0
	// answers a cancel at once but lets the interrupted model request run
	// on, and its answer becomes the next prompt's result (measured in
	// TestClaudeAgentACP; claude-agent-acp#551).
	AfterCancel bool
	// Text is the turn's last agent message; Messages are all of them, in
	// order. A message is the agent_message_chunk text of one messageId
	// (or, without ids, the chunks between two tool calls).
	Text     string
	Messages []string
	// Thought is the agent_thought_chunk text, concatenated.
	Thought string
	// ToolCalls are the turn's tool calls in the order they were created,
	// as last updated.
	ToolCalls []ToolCall
	// Usage is the last usage_update of the turn, or nil.
	Usage *Usage
	// Tokens are the turn's tokens as the prompt's answer counts them
	// (its usage member, the session-usage RFD), or nil when it has none.
	Tokens *TurnTokens
	// Raw is the session/prompt result as sent (nil when the turn ended
	// with an error the client tolerated after a cancel).
	Raw json.RawMessage
}

// turn is the state of a running turn; guarded by Client.mu.
type turn struct {
	n           int64
	call        *call // the session/prompt request
	cancelled   bool
	afterCancel bool
	messages    []*turnMessage
	split       bool // a tool call came after the last message
	thought     strings.Builder
	tools       map[string]*ToolCall
	order       []string
	usage       *Usage
}

type turnMessage struct {
	id   string
	text strings.Builder
}

// fold adds one event of the turn.
func (t *turn) fold(ev *Event) {
	switch ev.Kind {
	case EventMessage:
		t.message(ev.MessageID).text.WriteString(ev.Text)
	case EventThought:
		t.thought.WriteString(ev.Text)
	case EventToolCall:
		tc := t.tools[ev.Tool.ID]
		if tc == nil {
			tc = &ToolCall{ID: ev.Tool.ID}
			t.tools[ev.Tool.ID] = tc
			t.order = append(t.order, ev.Tool.ID)
			ev.Tool.Created = true // tool_call, or an update of an unknown id
		}
		upd := ev.Tool
		if upd.Title != "" {
			tc.Title = upd.Title
		}
		if upd.Kind != "" {
			tc.Kind = upd.Kind
		}
		if upd.Status != "" {
			tc.Status = upd.Status
		}
		if upd.RawInput != nil {
			tc.RawInput = upd.RawInput
		}
		if upd.RawOutput != nil {
			tc.RawOutput = upd.RawOutput
		}
		t.split = true
	case EventUsage:
		t.usage = ev.Usage
	}
}

// message returns the message a chunk with id belongs to, making a new one
// when needed.
func (t *turn) message(id string) *turnMessage {
	if id != "" {
		for _, m := range t.messages {
			if m.id == id {
				return m
			}
		}
	} else if n := len(t.messages); n > 0 && !t.split && t.messages[n-1].id == "" {
		return t.messages[n-1]
	}
	m := &turnMessage{id: id}
	t.messages = append(t.messages, m)
	t.split = false
	return m
}

// result builds the turn's result.
func (t *turn) result(sid string) *TurnResult {
	r := &TurnResult{SessionID: sid, Turn: t.n, Cancelled: t.cancelled, AfterCancel: t.afterCancel, Thought: t.thought.String(), Usage: t.usage}
	for _, m := range t.messages {
		r.Messages = append(r.Messages, m.text.String())
	}
	if n := len(r.Messages); n > 0 {
		r.Text = r.Messages[n-1]
	}
	for _, id := range t.order {
		r.ToolCalls = append(r.ToolCalls, *t.tools[id])
	}
	return r
}

// Prompt runs one turn (session/prompt) and returns how it ended. The
// session's updates during the turn are folded into the result (and go to
// Config.OnEvent); permission requests go to Config.Asker. When the turn's
// timeout runs out or ctx ends, the turn is interrupted (session/cancel,
// then a kill after Config.CancelTimeout) and Prompt returns what the turn
// produced together with a *TimeoutError or ctx's error. A turn the agent
// did not survive fails with an *ExitError that says how it died.
func (s *Session) Prompt(ctx context.Context, req TurnRequest) (*TurnResult, error) {
	c := s.c
	t := &turn{tools: make(map[string]*ToolCall)}
	cl, err := c.send(methodSessionPrompt, promptParams{SessionID: s.id, Prompt: []contentBlock{{Type: "text", Text: req.Text}}}, nil,
		func(cl *call) error {
			switch {
			case s.gone:
				return fmt.Errorf("acp %s: session %s is closed", methodSessionPrompt, s.id)
			case s.turn != nil:
				return fmt.Errorf("acp %s: %w", methodSessionPrompt, ErrBusy)
			}
			s.turns++
			t.n, t.call, t.afterCancel = s.turns, cl, s.lastCancelled
			s.turn = t
			cl.onEnd = func() { s.endLocked(t) }
			return nil
		})
	if err != nil {
		c.mu.Lock()
		if s.turn == t {
			s.turn = nil
		}
		c.mu.Unlock()
		return nil, err
	}
	if req.OnSent != nil {
		req.OnSent()
	}

	timeout := req.Timeout
	if timeout == 0 {
		timeout = c.cfg.turnTimeout()
	}
	var expired <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		expired = tm.C
	}
	var stopped error // why the client interrupted the turn
	select {
	case <-cl.done:
	case <-expired:
		stopped = &TimeoutError{Method: methodSessionPrompt, After: timeout}
	case <-ctx.Done():
		stopped = fmt.Errorf("acp %s: %w", methodSessionPrompt, ctx.Err())
	}
	if stopped != nil {
		c.log.Info("acp: interrupting the turn", "session", s.id, "turn", t.n, "why", stopped)
		if err := s.interrupt(t); err != nil {
			c.log.Warn("acp: interrupt", "session", s.id, "err", err)
		}
		<-cl.done
	}
	res, err := s.finish(t)
	if stopped != nil && res != nil {
		return res, stopped
	}
	return res, err
}

// endLocked ends turn t when its prompt's answer arrives (or the agent
// dies), on the reader: updates read after it are not the turn's. mu is
// held.
func (s *Session) endLocked(t *turn) {
	if s.turn == t {
		s.turn = nil
	}
	s.lastCancelled = t.cancelled
	for _, m := range t.messages {
		if m.id != "" {
			s.oldMessages[m.id] = true
		}
	}
}

// finish returns the result of turn t once its call is done.
func (s *Session) finish(t *turn) (*TurnResult, error) {
	c := s.c
	cl := t.call
	c.mu.Lock()
	res := t.result(s.id)
	perms := c.permsOfLocked(s.id, t.n)
	c.mu.Unlock()
	for _, p := range perms {
		p.respond(Cancelled) // the agent left them behind
	}
	var ee *ExitError
	switch {
	case errors.As(cl.err, &ee):
		return nil, cl.err
	case cl.err != nil && t.cancelled:
		// An agent that answers a cancel with an error (opencode once
		// did): the turn was cancelled.
		c.log.Info("acp: cancelled turn ended with an error", "session", s.id, "err", cl.err)
		res.StopReason = StopCancelled
		return res, nil
	case cl.err != nil:
		return nil, cl.err
	}
	var pr promptResult
	if err := json.Unmarshal(cl.result, &pr); err != nil {
		return nil, fmt.Errorf("acp %s: result: %w", methodSessionPrompt, err)
	}
	res.StopReason, res.Raw, res.Tokens = pr.StopReason, cl.result, pr.Usage
	return res, nil
}

// Interrupt cancels the session's running turn: session/cancel, every
// pending permission request answered Cancelled, then a wait for the turn
// to end (with cancelled, end_turn or an error: all are accepted). When it
// has not ended after Config.CancelTimeout (or ctx ends first), the
// agent's process group is killed and Interrupt returns ErrCancelIgnored;
// the turn then fails with an *ExitError saying so. It is a no-op when no
// turn is running.
func (s *Session) Interrupt(ctx context.Context) error {
	c := s.c
	c.mu.Lock()
	t := s.turn
	c.mu.Unlock()
	if t == nil {
		return nil
	}
	return s.interruptCtx(ctx, t)
}

func (s *Session) interrupt(t *turn) error { return s.interruptCtx(context.Background(), t) }

func (s *Session) interruptCtx(ctx context.Context, t *turn) error {
	c := s.c
	c.mu.Lock()
	t.cancelled = true
	cl := t.call
	perms := c.permsOfLocked(s.id, t.n)
	c.mu.Unlock()
	for _, p := range perms {
		p.respond(Cancelled)
	}
	if err := c.notify(methodSessionCancel, sessionIDParams{SessionID: s.id}); err != nil {
		c.log.Warn("acp: session/cancel not sent", "session", s.id, "err", err)
	}
	d := c.cfg.cancelTimeout()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-cl.done:
		return nil
	case <-tm.C:
	case <-ctx.Done():
	}
	c.proc.Kill(childproc.Because(fmt.Sprintf("the turn did not end within %v after session/cancel", d), ErrCancelIgnored))
	<-cl.done
	return fmt.Errorf("acp: session %s: %w within %v; its process group was killed", s.id, ErrCancelIgnored, d)
}
