package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// turnHandler receives one turn's events and approvals from the backend.
// Its methods run on the backend's reader goroutine and never block.
type turnHandler struct {
	s    *Server
	sess *session
	call *toolCall
}

func (h *turnHandler) Event(e codexchild.Event) {
	h.s.forwardEvent(h.sess, h.call, e)
	if h.call != nil && h.call.prog != nil {
		if msg := progressMessage(e); msg != "" {
			h.call.prog.send(msg)
		}
	}
}

// Flush writes the events held back since Codex's output last ran dry
// (codexchild.Flusher).
func (h *turnHandler) Flush() { h.s.client.flushHeld() }

func (h *turnHandler) Approval(a *codexchild.Approval) {
	h.s.wg.Add(1)
	go func() {
		defer h.s.wg.Done()
		h.s.bridgeApproval(h.sess, h.call, a)
	}()
}

// sessionCounters are per-session event counters (FR-19.4).
type sessionCounters struct {
	forwarded atomic.Int64
	dropped   atomic.Int64
}

// forwardEvent sends a Codex event to the client as a codex/event
// notification, unmodified apart from the added agent_id and identity, and
// _meta.requestId set to the client's request id (the child's own id means
// nothing to the client; turns the proxy starts itself carry none). On
// app-server the original method and params are wrapped:
// {"_meta":{threadId,turnId},"agent_id","identity","method","params"}.
// Events are held back until the Codex reader runs dry (turnHandler.Flush),
// queued, or dropped when the queue is full or the client is gone.
func (s *Server) forwardEvent(sess *session, call *toolCall, e codexchild.Event) {
	var ids quotedIDs
	if sess != nil {
		ids = sess.quoted()
	}
	var reqID json.RawMessage
	if call != nil {
		reqID = call.rawID
	}
	// The session's record is updated where the event is built: by the
	// Codex reader when it writes the event itself, by the pump when the
	// event waits in the queue, here when it is dropped.
	ok := s.client.event(func() *jsonrpcframe.Message {
		if sess != nil {
			sess.recordEvent(e)
		}
		return eventMessage(e, ids, reqID)
	}, true)
	if sess != nil {
		if ok {
			sess.counters.forwarded.Add(1)
		} else {
			sess.counters.dropped.Add(1)
			sess.recordEvent(e)
		}
	}
}

// eventMessage builds the codex/event notification for e by splicing the
// child's params: _meta gets the client's requestId (or none) and the
// agent_id, agent_id and identity are added, every other byte is the
// child's.
func eventMessage(e codexchild.Event, ids quotedIDs, reqID json.RawMessage) *jsonrpcframe.Message {
	var origBuf, metaBuf [16]jsonrpcframe.Member // no allocation for the split
	orig, meta := origBuf[:0], metaBuf[:0]
	if e.Method == "codex/event" {
		var ok bool
		if orig, ok = jsonrpcframe.AppendMembers(origBuf[:0], e.Params); !ok && len(e.Params) > 0 {
			orig = append(origBuf[:0], jsonrpcframe.Member{Key: []byte(`"event"`), Value: e.Params})
		}
		meta, _ = jsonrpcframe.AppendMembers(metaBuf[:0], jsonrpcframe.Lookup(orig, "_meta"))
	} else {
		orig = append(orig, jsonrpcframe.Member{Key: []byte(`"method"`), Value: jsonString(e.Method)})
		if len(e.Params) > 0 {
			orig = append(orig, jsonrpcframe.Member{Key: []byte(`"params"`), Value: e.Params})
		}
		if e.ThreadID != "" {
			meta = append(meta, jsonrpcframe.Member{Key: []byte(`"threadId"`), Value: jsonString(e.ThreadID)})
		}
		if e.TurnID != "" {
			meta = append(meta, jsonrpcframe.Member{Key: []byte(`"turnId"`), Value: jsonString(e.TurnID)})
		}
	}
	b := make([]byte, 0, len(e.Params)+160)
	b = append(b, '{')
	// _meta first: the child's members except requestId, then ours.
	b = append(b, `"_meta":{`...)
	for _, m := range meta {
		switch string(m.Key) {
		case `"requestId"`, `"agent_id"`:
			continue
		}
		b = appendMember(b, string(m.Key), m.Value)
	}
	if reqID != nil {
		b = appendMember(b, `"requestId"`, reqID)
	}
	if ids.agentID != nil {
		b = appendMember(b, `"agent_id"`, ids.agentID)
	}
	b = append(b, '}')
	if ids.agentID != nil {
		b = appendMember(b, `"agent_id"`, ids.agentID)
		b = appendMember(b, `"identity"`, ids.identity)
	}
	for _, m := range orig {
		switch string(m.Key) {
		case `"_meta"`, `"agent_id"`, `"identity"`:
			continue
		}
		b = appendMember(b, string(m.Key), m.Value)
	}
	b = append(b, '}')
	return &jsonrpcframe.Message{Versioned: true, Method: "codex/event", Params: b}
}

// progressMessage is a short human line for the events worth reporting as
// progress ("running `go test`", "editing 3 files"), "" for the rest.
func progressMessage(e codexchild.Event) string {
	var p struct {
		Msg struct {
			Type    string          `json:"type"`
			Command json.RawMessage `json:"command"`
			Changes map[string]any  `json:"changes"`
			Message string          `json:"message"`
		} `json:"msg"`
		Item struct {
			Type    string          `json:"type"`
			Command json.RawMessage `json:"command"`
			Changes []any           `json:"changes"`
			Tool    string          `json:"tool"`
		} `json:"item"`
	}
	_ = json.Unmarshal(e.Params, &p)
	switch e.Type {
	case "task_started", "turn/started":
		return "turn started"
	case "exec_command_begin":
		return "running `" + shortCommand(p.Msg.Command) + "`"
	case "patch_apply_begin":
		return fmt.Sprintf("editing %d file%s", len(p.Msg.Changes), plural(len(p.Msg.Changes)))
	case "exec_approval_request", "apply_patch_approval_request":
		return "waiting for approval"
	case "mcp_tool_call_begin":
		return "calling a tool"
	case "item/started":
		switch p.Item.Type {
		case "commandExecution":
			return "running `" + shortCommand(p.Item.Command) + "`"
		case "fileChange":
			return fmt.Sprintf("editing %d file%s", len(p.Item.Changes), plural(len(p.Item.Changes)))
		case "mcpToolCall":
			return "calling " + p.Item.Tool
		}
	}
	// Nothing for the turn's last events (agent_message, task_complete,
	// turn/completed): progress that arrives in the same read as the response
	// trips the TypeScript SDK (typescript-sdk#2580), and Claude Code drops
	// the connection on progress for a finished request.
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// shortCommand renders a command given as a string or an argv, dropping a
// leading "bash -lc".
func shortCommand(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		// app-server sends "/bin/bash -lc '<cmd>'" as one string.
		for _, pre := range []string{"/bin/bash -lc '", "bash -lc '", "/bin/sh -c '"} {
			if rest, ok := strings.CutPrefix(s, pre); ok && strings.HasSuffix(rest, "'") {
				s = strings.ReplaceAll(strings.TrimSuffix(rest, "'"), `'\''`, "'")
				break
			}
		}
		return clip(s, 80)
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		if len(argv) == 3 && strings.HasSuffix(argv[0], "bash") && argv[1] == "-lc" {
			return clip(argv[2], 80)
		}
		return clip(strings.Join(argv, " "), 80)
	}
	return "a command"
}

// clip cuts s to n characters on a character boundary, adding "…".
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// quotedIDs are a session's agent_id and identity as JSON strings (nil
// without a session).
type quotedIDs struct {
	agentID, identity []byte
}

// quoted returns the session's quotedIDs, encoded once for all its events.
func (s *session) quoted() quotedIDs {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.quotedFor != [2]string{s.rec.AgentID, s.rec.Identity} || s.quotedIDs.agentID == nil {
		s.quotedFor = [2]string{s.rec.AgentID, s.rec.Identity}
		s.quotedIDs = quotedIDs{jsonString(s.rec.AgentID), jsonString(s.rec.Identity)}
	}
	return s.quotedIDs
}
