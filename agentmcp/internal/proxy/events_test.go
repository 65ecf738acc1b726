package proxy

import (
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// TestProgressMessage: the progress lines of a turn, from each backend's
// events through their backend-neutral translation.
func TestProgressMessage(t *testing.T) {
	mcp := func(typ, params string) backend.Event {
		return backend.Event{Method: "codex/event", Type: typ, Params: []byte(params), Translate: codexchild.Translate}
	}
	app := func(method, params string) backend.Event {
		return backend.Event{Method: method, Type: method, Params: []byte(params), Translate: codexchild.Translate}
	}
	neutral := func(a backend.Activity) backend.Event {
		return backend.Event{Method: "session/update", Type: "tool_call", Params: []byte(`{}`), Neutral: &a}
	}
	tests := []struct {
		name string
		e    backend.Event
		want string
	}{
		{"mcp turn", mcp("task_started", `{"msg":{"type":"task_started"}}`), "turn started"},
		{"app turn", app("turn/started", `{}`), "turn started"},
		{"mcp command", mcp("exec_command_begin", `{"msg":{"type":"exec_command_begin","command":["bash","-lc","go test ./..."]}}`), "running `go test ./...`"},
		{"mcp patch", mcp("patch_apply_begin", `{"msg":{"type":"patch_apply_begin","changes":{"a.go":{},"b.go":{}}}}`), "editing 2 files"},
		{"mcp patch of one file", mcp("patch_apply_begin", `{"msg":{"type":"patch_apply_begin","changes":{"a.go":{}}}}`), "editing 1 file"},
		{"mcp exec approval", mcp("exec_approval_request", `{"msg":{"type":"exec_approval_request","command":["ls"]}}`), "waiting for approval"},
		{"mcp patch approval", mcp("apply_patch_approval_request", `{"msg":{"type":"apply_patch_approval_request"}}`), "waiting for approval"},
		{"mcp tool call", mcp("mcp_tool_call_begin", `{"msg":{"type":"mcp_tool_call_begin","invocation":{"server":"atm","tool":"atm_send"}}}`), "calling atm.atm_send"},
		{"mcp command ends", mcp("exec_command_end", `{"msg":{"type":"exec_command_end","command":["ls"],"exit_code":0}}`), ""},
		{"app command", app("item/started", `{"item":{"type":"commandExecution","command":"ls -la"}}`), "running `ls -la`"},
		{"app file change", app("item/started", `{"item":{"type":"fileChange","changes":[{},{},{}]}}`), "editing 3 files"},
		{"app tool call", app("item/started", `{"item":{"type":"mcpToolCall","server":"atm","tool":"atm_send"}}`), "calling atm.atm_send"},
		{"app command completes", app("item/completed", `{"item":{"type":"commandExecution","command":"ls -la"}}`), ""},
		{"app message starts", app("item/started", `{"item":{"type":"agentMessage"}}`), ""},
		{"app not json", app("item/started", `not json`), ""},
		{"mcp delta", mcp("agent_message_delta", `{"msg":{"delta":"hi"}}`), ""},
		{"mcp message", mcp("agent_message", `{"msg":{"type":"agent_message","message":"done"}}`), ""},
		{"mcp turn complete", mcp("task_complete", `{}`), ""},
		{"app turn completed", app("turn/completed", `{}`), ""},
		{"another agent's command", neutral(backend.Activity{Kind: backend.ActivityItem,
			Item: &backend.Item{ID: "t1", Type: "command", Summary: "npm test", Started: true}}), "running `npm test`"},
		{"another agent's approval", neutral(backend.Activity{Kind: backend.ActivityApproval}), "waiting for approval"},
		{"another agent's message", neutral(backend.Activity{Kind: backend.ActivityMessage, Text: "hi"}), ""},
	}
	for _, tt := range tests {
		if got := progressMessage(tt.e.Activity()); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
