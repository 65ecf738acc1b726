package proxy

import (
	"encoding/json"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestEventMessage: the spliced event equals the decoded-and-rebuilt one.
func TestEventMessage(t *testing.T) {
	tests := []struct {
		name  string
		e     backend.Event
		reqID string
		agent string
		want  string
	}{
		{"mcp event", backend.Event{Method: "codex/event", Params: json.RawMessage(`{"_meta":{"requestId":7,"threadId":"T"},"id":"u","msg":{"type":"agent_message","message":"a \"quoted\" {text}"}}`)},
			`"c1"`, "codex-1", `{"_meta":{"threadId":"T","requestId":"c1","agent_id":"codex-1"},"agent_id":"codex-1","identity":"arch","id":"u","msg":{"type":"agent_message","message":"a \"quoted\" {text}"}}`},
		{"no client request", backend.Event{Method: "codex/event", Params: json.RawMessage(` { "_meta" : { "requestId" : 7 } , "msg" : [1, {"a":"}"}] } `)},
			"", "codex-1", `{"_meta":{"agent_id":"codex-1"},"agent_id":"codex-1","identity":"arch","msg":[1, {"a":"}"}]}`},
		{"app-server event", backend.Event{Method: "item/completed", ThreadID: "T", TurnID: "U", Params: json.RawMessage(`{"item":{"type":"agentMessage"}}`)},
			`3`, "codex-2", `{"_meta":{"threadId":"T","turnId":"U","requestId":3,"agent_id":"codex-2"},"agent_id":"codex-2","identity":"arch","method":"item/completed","params":{"item":{"type":"agentMessage"}}}`},
		{"orphan without session", backend.Event{Method: "codex/event", Params: json.RawMessage(`{"msg":{"type":"warning"}}`)},
			"", "", `{"_meta":{},"msg":{"type":"warning"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req json.RawMessage
			if tt.reqID != "" {
				req = json.RawMessage(tt.reqID)
			}
			var ids session.IDs
			if tt.agent != "" {
				ids = session.IDs{AgentID: jsonString(tt.agent), Identity: jsonString("arch")}
			}
			m := eventMessage(tt.e, ids, req)
			if !json.Valid(m.Params) {
				t.Fatalf("invalid JSON: %s", m.Params)
			}
			var got, want any
			_ = json.Unmarshal(m.Params, &got)
			_ = json.Unmarshal([]byte(tt.want), &want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n%s", diff, m.Params)
			}
		})
	}
}

// TestJSONString: the quick path quotes exactly as json.Marshal does.
func TestJSONString(t *testing.T) {
	for _, s := range []string{"", "codex-01m803zbygy38qtcn7r2wceh1c", "arch", "a b~", `q"uote`, `back\slash`, "<tag>&", "tab\t", "é", "\u2028", "\xff", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := jsonString(s); string(got) != string(want) {
			t.Errorf("jsonString(%q) = %s, want %s", s, got, want)
		}
	}
}
