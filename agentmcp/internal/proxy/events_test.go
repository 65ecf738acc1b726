package proxy

import (
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
)

func TestProgressMessage(t *testing.T) {
	tests := []struct {
		typ, params string
		want        string
	}{
		{"task_started", `{}`, "turn started"},
		{"turn/started", `{}`, "turn started"},
		{"exec_command_begin", `{"msg":{"type":"exec_command_begin","command":["bash","-lc","go test ./..."]}}`, "running `go test ./...`"},
		{"patch_apply_begin", `{"msg":{"type":"patch_apply_begin","changes":{"a.go":{},"b.go":{}}}}`, "editing 2 files"},
		{"patch_apply_begin", `{"msg":{"type":"patch_apply_begin","changes":{"a.go":{}}}}`, "editing 1 file"},
		{"exec_approval_request", `{}`, "waiting for approval"},
		{"apply_patch_approval_request", `{}`, "waiting for approval"},
		{"mcp_tool_call_begin", `{}`, "calling a tool"},
		{"item/started", `{"item":{"type":"commandExecution","command":"ls -la"}}`, "running `ls -la`"},
		{"item/started", `{"item":{"type":"fileChange","changes":[{},{},{}]}}`, "editing 3 files"},
		{"item/started", `{"item":{"type":"mcpToolCall","tool":"atm_send"}}`, "calling atm_send"},
		{"item/started", `{"item":{"type":"agentMessage"}}`, ""},
		{"item/started", `not json`, ""},
		{"agent_message_delta", `{"msg":{"delta":"hi"}}`, ""},
		{"agent_message", `{}`, ""},
		{"task_complete", `{}`, ""},
		{"turn/completed", `{}`, ""},
	}
	for _, tt := range tests {
		got := progressMessage(codexchild.Event{Type: tt.typ, Params: []byte(tt.params)})
		if got != tt.want {
			t.Errorf("%s %s: got %q, want %q", tt.typ, tt.params, got, tt.want)
		}
	}
}
