package acp_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// FuzzParseUpdate: any params give an event or an error, never a panic;
// an event has its session, a kind, and a tool call with an id.
func FuzzParseUpdate(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"hi"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"image","data":"x"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"ls","kind":"execute","status":"pending","content":[{"type":"diff","path":"/a","newText":"x"}],"rawInput":{"a":1}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"c","priority":"high","status":"pending"}]}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":5,"size":10,"cost":{"amount":0.5,"currency":"USD"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"default"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call"}}`,
		`{"update":{}}`, `[]`, `null`, `{"sessionId":"s","update":"x"}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"a\u00e9\ud800"},"_meta":{}}}`,
		`{"sessionId":"s","SessionId":"t","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","Content":{"type":"text","text":"x"},"content":{"type":"text","text":"y"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","title":5,"content":{"type":"text","text":"x"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","messageId":null,"content":{"type":"image","text":"x"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sid, ev, err := acp.ParseUpdate(json.RawMessage(b))
		// The fast path for chunks reads what encoding/json reads.
		gsid, gev, gerr := acp.ParseUpdateGeneral(json.RawMessage(b))
		if (err == nil) != (gerr == nil) || sid != gsid || !reflect.DeepEqual(ev, gev) {
			t.Fatalf("ParseUpdate(%q) = %q %+v %v; the general parser: %q %+v %v", b, sid, ev, err, gsid, gev, gerr)
		}
		if err != nil {
			return
		}
		if sid == "" || ev.SessionID != sid || ev.Kind == "" {
			t.Fatalf("event %+v of session %q", ev, sid)
		}
		if ev.Kind == acp.EventToolCall && (ev.Tool == nil || ev.Tool.ID == "") {
			t.Fatalf("tool call event without an id: %+v", ev)
		}
	})
}

// TestParseUpdate checks the neutral events of the update kinds.
func TestParseUpdate(t *testing.T) {
	tests := []struct {
		in   string
		kind acp.EventKind
		text string
	}{
		{`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`, acp.EventMessage, "hi"},
		{`{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"q"}}}`, acp.EventUserMessage, "q"},
		{`{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}}`, acp.EventThought, "hm"},
		{`{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}`, acp.EventCommands, ""},
		{`{"sessionId":"s","update":{"sessionUpdate":"config_option_update","configOptions":[]}}`, acp.EventConfigOptions, ""},
		{`{"sessionId":"s","update":{"sessionUpdate":"session_info_update","title":"t"}}`, acp.EventSessionInfo, ""},
		{`{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle"}}`, acp.EventOther, ""},
	}
	for _, tc := range tests {
		_, ev, err := acp.ParseUpdate(json.RawMessage(tc.in))
		if err != nil || ev.Kind != tc.kind || ev.Text != tc.text {
			t.Errorf("ParseUpdate(%s) = %v %q, %v; want %v %q", tc.in, ev.Kind, ev.Text, err, tc.kind, tc.text)
		}
	}
	for _, bad := range []string{`{"update":{}}`, `{"sessionId":"s","update":{"sessionUpdate":"tool_call_update"}}`, `[1]`} {
		if _, _, err := acp.ParseUpdate(json.RawMessage(bad)); err == nil {
			t.Errorf("ParseUpdate(%s) succeeded", bad)
		}
	}
}
