package proxy

import (
	"encoding/json"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// eventSink passes the sessions' Codex events to the client as codex/event
// notifications (session.Sink), with progress for the request that started
// the turn.
type eventSink struct{ c *mcpconn.Conn }

// Event sends e unmodified apart from the added agent_id and identity, and
// _meta.requestId set to the client's request id (the child's own id means
// nothing to the client; turns the proxy starts itself carry none). On
// app-server the original method and params are wrapped:
// {"_meta":{threadId,turnId},"agent_id","identity","method","params"}.
// Events are held back until the Codex reader runs dry (Flush), queued, or
// dropped when the queue is full or the client is gone (FR-19.3, FR-19.4).
func (k eventSink) Event(e backend.Event, act backend.Activity, ids session.IDs, call session.CallRef) bool {
	var reqID json.RawMessage
	if call != nil {
		reqID = call.RequestID()
	}
	ok := k.c.Event(func() *jsonrpcframe.Message { return eventMessage(e, ids, reqID) }, true)
	if call != nil && call.WantsProgress() {
		if msg := progressMessage(act); msg != "" {
			call.Progress(msg)
		}
	}
	return ok
}

// Flush writes the events held back since Codex's output last ran dry.
func (k eventSink) Flush() { k.c.Flush() }

// eventMessage builds the codex/event notification for e by splicing the
// child's params: _meta gets the client's requestId (or none) and the
// agent_id, agent_id and identity are added, every other byte is the
// child's.
func eventMessage(e backend.Event, ids session.IDs, reqID json.RawMessage) *jsonrpcframe.Message {
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
	if ids.AgentID != nil {
		b = appendMember(b, `"agent_id"`, ids.AgentID)
	}
	b = append(b, '}')
	if ids.AgentID != nil {
		b = appendMember(b, `"agent_id"`, ids.AgentID)
		b = appendMember(b, `"identity"`, ids.Identity)
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

// progressMessage is a short human line for the activity worth reporting
// as progress ("running `go test`", "editing 3 files"), "" for the rest,
// whatever the agent: act is the event's backend-neutral translation.
func progressMessage(act backend.Activity) string {
	switch act.Kind {
	case backend.ActivityTurnStarted:
		return "turn started"
	case backend.ActivityApproval:
		return "waiting for approval"
	case backend.ActivityItem:
		if it := act.Item; it != nil && it.Started {
			switch it.Type {
			case "command":
				return "running `" + it.Summary + "`"
			case "file_change":
				return "editing " + it.Summary
			case "tool_call":
				return "calling " + it.Summary
			}
		}
	}
	// Nothing for the rest, nor for the turn's last events (the agent's
	// message, the turn's end): progress that arrives in the same read as
	// the response trips the TypeScript SDK (typescript-sdk#2580), and
	// Claude Code drops the connection on progress for a finished request.
	return ""
}
