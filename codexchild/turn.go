package codexchild

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// How a call ended without the child's answer.
type abandonKind int

const (
	notAbandoned     abandonKind = iota
	abandonInterrupt             // Interrupt or ctx: notifications/cancelled sent
	abandonTimeout               // the call's timeout: notifications/cancelled sent
	abandonAbort                 // an approval answered with Abort: Codex sends nothing more
)

// call is one request of the backend to the child, waiting for its answer.
// Whoever removes it from MCPServer.pending sends its one reply.
type call struct {
	id     jsonrpcframe.ID // the backend's id toward the child
	origID jsonrpcframe.ID // Forward: the caller's id
	method string
	reply  chan reply // buffered 1; exactly one send
	turn   *turn      // nil unless a Turn
}

func (c *call) callID() jsonrpcframe.ID { return c.id }

func (c *call) fail(ee *backend.ExitError) {
	if c.turn != nil {
		c.turn.closed.Store(true)
	}
	c.reply <- reply{err: ee}
}

func (c *call) ended() error { return (<-c.reply).err }

// reply is how a call ended.
type reply struct {
	msg       *jsonrpcframe.Message // the child's response
	res       *backend.Result       // msg read as a turn's result (turns with OnResult)
	err       error                 // the child died, or writing failed
	abandoned abandonKind           // ended by the backend itself
}

// turn is the state of a running Turn.
//
// threadID is guarded by MCPServer.mu. mu serialises delivery to the
// handler: the reader holds it while calling the handler, and the Turn
// goroutine takes it once after the call ended (with closed set), so no
// event or approval reaches the handler after Turn has returned. Nothing
// else takes mu, so a handler may call Interrupt or Approval.Respond from
// inside a callback.
type turn struct {
	handler  backend.Handler
	onResult func(*backend.Result)
	// onAccepted is TurnRequest.OnAccepted; the reader calls it (accept)
	// and clears it, and nothing else touches it after Turn made the turn.
	// acked is closed then (nil without OnAccepted); over is set by Turn
	// before it returns, after which accept does nothing.
	onAccepted func()
	// onThread is TurnRequest.OnThread of a turn that starts a thread; the
	// reader calls it with the first event's thread id (under mu) and
	// clears it.
	onThread func(string)
	// replaced is Result.Replaced: why the turn runs on a new thread in
	// place of the one asked for; set before the request is sent.
	replaced  string
	acked     chan struct{}
	over      atomic.Bool
	threadID  string // guarded by MCPServer.mu
	codexTurn string // the Codex turn id seen under the call's own id; guarded by MCPServer.mu

	closed atomic.Bool
	mu     sync.Mutex
	turnID string
	texts  []string          // agent_message texts
	delta  strings.Builder   // deltas of the agent message in progress
	reason map[string]string // call_id → reason of the approval event
}

// eventEnvelope is the part of a codex/event's params the backend reads.
type eventEnvelope struct {
	Meta struct {
		RequestID json.RawMessage `json:"requestId"`
		ThreadID  string          `json:"threadId"`
	} `json:"_meta"`
	ID  string `json:"id"`
	Msg struct {
		Type    string `json:"type"`
		TurnID  string `json:"turn_id"`
		Message string `json:"message"`
		Delta   string `json:"delta"`
		CallID  string `json:"call_id"`
		Reason  string `json:"reason"`
	} `json:"msg"`
}

// scan fills the envelope from the event's params without decoding the
// whole event: every event passes through here on the reader's critical
// path, and most of an event's bytes (a turn's input, a command's output)
// are of no interest to routing. It reports false when the params are not
// an object.
func (e *eventEnvelope) scan(params json.RawMessage, ids *interner) bool {
	var topBuf, metaBuf, msgBuf [16]jsonrpcframe.Member // no allocation
	top, ok := jsonrpcframe.AppendMembers(topBuf[:0], params)
	if !ok {
		return false
	}
	if meta, ok := jsonrpcframe.AppendMembers(metaBuf[:0], jsonrpcframe.Lookup(top, "_meta")); ok {
		e.Meta.RequestID = jsonrpcframe.Lookup(meta, "requestId")
		e.Meta.ThreadID = ids.str(jsonrpcframe.Lookup(meta, "threadId"))
	}
	e.ID = ids.str(jsonrpcframe.Lookup(top, "id"))
	msg, ok := jsonrpcframe.AppendMembers(msgBuf[:0], jsonrpcframe.Lookup(top, "msg"))
	if !ok {
		return true
	}
	str := func(name string) string {
		s, _ := jsonrpcframe.String(jsonrpcframe.Lookup(msg, name))
		return s
	}
	e.Msg.Type = ids.str(jsonrpcframe.Lookup(msg, "type"))
	e.Msg.TurnID = ids.str(jsonrpcframe.Lookup(msg, "turn_id"))
	switch e.Msg.Type {
	case "agent_message_content_delta", "agent_message_delta":
		e.Msg.Delta = str("delta")
	case "agent_message":
		e.Msg.Message = str("message")
	case "exec_approval_request", "apply_patch_approval_request":
		e.Msg.CallID = str("call_id")
		e.Msg.Reason = str("reason")
	case "error", "task_complete", "turn_aborted":
		e.Msg.Message = str("message")
		e.Msg.Reason = str("reason")
	}
	return true
}

// observe updates the turn's state from one of its events; t.mu is held.
func (t *turn) observe(env *eventEnvelope) {
	m := &env.Msg
	if m.TurnID != "" {
		t.turnID = m.TurnID
	}
	switch m.Type {
	case "agent_message_content_delta":
		t.delta.WriteString(m.Delta)
	case "agent_message":
		t.texts = append(t.texts, m.Message)
		t.delta.Reset()
	case "exec_approval_request", "apply_patch_approval_request":
		if m.Reason != "" && m.CallID != "" {
			if t.reason == nil {
				t.reason = map[string]string{}
			}
			t.reason[m.CallID] = m.Reason
		}
	}
}

// accept calls the turn's OnAccepted, once; on the reader, with t.mu held
// or the call taken from pending (either way Turn has not returned).
func (t *turn) accept() {
	if f := t.onAccepted; f != nil && !t.over.Load() {
		t.onAccepted = nil
		f()
		close(t.acked)
	}
}

// partial returns the agent text seen so far; t.mu is held.
func (t *turn) partial() string {
	parts := t.texts
	if t.delta.Len() > 0 {
		parts = append(parts[:len(parts):len(parts)], t.delta.String())
	}
	return strings.Join(parts, "\n")
}

// resultThread returns structuredContent.threadId of a tools/call response,
// or "".
func resultThread(m *jsonrpcframe.Message) string {
	var topBuf, scBuf [8]jsonrpcframe.Member // read on the reader's path: no decoding
	top, _ := jsonrpcframe.AppendMembers(topBuf[:0], m.Result)
	sc, _ := jsonrpcframe.AppendMembers(scBuf[:0], jsonrpcframe.Lookup(top, "structuredContent"))
	id, _ := jsonrpcframe.String(jsonrpcframe.Lookup(sc, "threadId"))
	return id
}

// parseResult turns a tools/call result into a Result. threadID is the
// turn's thread as far as the backend knows it.
func parseResult(raw json.RawMessage, threadID, turnID string) (*backend.Result, error) {
	var topBuf, scBuf [8]jsonrpcframe.Member
	top, ok := jsonrpcframe.AppendMembers(topBuf[:0], raw)
	if !ok && strings.TrimSpace(string(raw)) != "null" {
		return nil, fmt.Errorf("result is not an object: %.100s", raw)
	}
	isErr := string(jsonrpcframe.Lookup(top, "isError")) == "true"
	res := &backend.Result{ThreadID: threadID, TurnID: turnID, IsError: isErr, Raw: raw, Status: "completed"}
	if isErr {
		res.Status = "failed"
	}
	if sc, ok := jsonrpcframe.AppendMembers(scBuf[:0], jsonrpcframe.Lookup(top, "structuredContent")); ok {
		if id, _ := jsonrpcframe.String(jsonrpcframe.Lookup(sc, "threadId")); id != "" {
			res.ThreadID = id
		}
		res.Text, _ = jsonrpcframe.String(jsonrpcframe.Lookup(sc, "content"))
		return res, nil
	}
	var content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if c := jsonrpcframe.Lookup(top, "content"); len(c) > 0 && string(c) != "null" {
		if err := json.Unmarshal(c, &content); err != nil {
			return nil, err
		}
	}
	var texts []string
	for _, c := range content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	res.Text = strings.Join(texts, "\n")
	return res, nil
}

// toolCallParams returns the tools/call params of a turn: the codex tool
// (a new thread) or codex-reply. A reply, the common turn, is written by
// hand: {"arguments":{"prompt":…,"threadId":…},"name":"codex-reply"}, the
// bytes encoding/json would write for the map.
func toolCallParams(req backend.TurnRequest) (name string, params any) {
	if req.ThreadID != "" {
		b := make([]byte, 0, len(req.Prompt)+len(req.ThreadID)+64)
		b = append(b, `{"arguments":{"prompt":`...)
		b = jsonrpcframe.AppendString(b, req.Prompt)
		b = append(b, `,"threadId":`...)
		b = jsonrpcframe.AppendString(b, req.ThreadID)
		b = append(b, `},"name":"codex-reply"}`...)
		return "codex-reply", json.RawMessage(b)
	}
	args := map[string]any{"prompt": req.Prompt}
	p, o := req.Params, optionsOf(req.Params)
	for k, v := range map[string]string{
		"cwd":                    p.Cwd,
		"model":                  p.Model,
		"approval-policy":        o.ApprovalPolicy,
		"sandbox":                o.Sandbox,
		"base-instructions":      p.BaseInstructions,
		"developer-instructions": p.DeveloperInstructions,
		"compact-prompt":         o.CompactPrompt,
		"profile":                o.Profile,
	} {
		if v != "" {
			args[k] = v
		}
	}
	if cfg := codexConfig(p); len(cfg) > 0 {
		args["config"] = cfg // with the tool servers (toolservers.go)
	}
	return "codex", map[string]any{"name": "codex", "arguments": args}
}

// interner returns the Go string of a JSON string token, reusing one of the
// strings it returned lately when the text is the same: the thread id, turn
// id and type of a turn's events repeat from one event to the next, and
// every event passes through the reader. Its zero value is ready; it is not
// safe for concurrent use.
type interner struct {
	recent [8]string
	next   int
}

func (in *interner) str(tok json.RawMessage) string {
	if len(tok) < 2 || tok[0] != '"' || bytes.IndexByte(tok, '\\') >= 0 {
		s, _ := jsonrpcframe.String(tok)
		return s
	}
	inner := tok[1 : len(tok)-1]
	for _, s := range in.recent {
		if s == string(inner) { // no allocation for the comparison
			return s
		}
	}
	s, _ := jsonrpcframe.String(tok)
	in.recent[in.next] = s
	in.next = (in.next + 1) % len(in.recent)
	return s
}
