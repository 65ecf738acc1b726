package codexchild

import (
	"encoding/json"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// mcpEvent is a codex/event of mcp-server with msg as recorded from Codex
// 0.153.4 (docs/codex-wire.md#codexevent).
func mcpEvent(msg string) backend.Event {
	var m struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(msg), &m)
	params := `{"_meta": {"requestId": 3, "threadId": "T"}, "id": "turn-1", "msg": ` + msg + `}`
	return backend.Event{Method: "codex/event", Type: m.Type, Params: json.RawMessage(params), Translate: mcpActivity} // as the mcp-server reader makes it
}

// appEvent is an app-server notification.
func appEvent(method, params string) backend.Event {
	return backend.Event{Method: method, Type: method, Params: json.RawMessage(params), Translate: appActivity} // as the app-server reader makes it
}

// TestEventActivity: what each Codex event means in backend-neutral terms,
// for both protocols' event shapes; deltas and bookkeeping mean nothing.
func TestEventActivity(t *testing.T) {
	// token_count info and tokenUsage as Codex 0.153.4 and 0.169.0 send
	// them (docs/codex-wire.md; mockcodex writes the same shapes).
	tokens := `{"total_token_usage": {"input_tokens": 240, "cached_input_tokens": 100, "cache_write_input_tokens": 0, "output_tokens": 24, "reasoning_output_tokens": 0, "total_tokens": 264}, "last_token_usage": {"input_tokens": 120, "cached_input_tokens": 0, "output_tokens": 12, "reasoning_output_tokens": 0, "total_tokens": 132}, "model_context_window": 258400}`
	tests := []struct {
		name string
		e    backend.Event
		want backend.Activity
	}{
		{"mcp turn started", mcpEvent(`{"type": "task_started", "turn_id": "turn-1"}`), backend.Activity{Kind: backend.ActivityTurnStarted}},
		{"mcp session configured names the model", mcpEvent(`{"type": "session_configured", "session_id": "T", "thread_id": "T", "model": "gpt-5.2-codex", "model_provider_id": "openai", "approval_policy": "on-request"}`),
			backend.Activity{Model: "gpt-5.2-codex"}},
		{"mcp command begins", mcpEvent(`{"type": "exec_command_begin", "call_id": "call_1", "turn_id": "turn-1", "command": ["/bin/bash", "-lc", "go test ./..."], "cwd": "/w"}`),
			backend.Activity{Kind: backend.ActivityItem, Summary: "go test ./...", Item: &backend.Item{ID: "call_1", Type: "command", Summary: "go test ./...", Started: true}}},
		{"mcp command fails", mcpEvent(`{"type": "exec_command_end", "call_id": "call_1", "command": ["/bin/bash", "-lc", "go test ./..."], "stdout": "FAIL", "exit_code": 1, "status": "completed"}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "call_1", Type: "command", Status: "failed (exit 1)", Summary: "go test ./..."}}},
		{"mcp command succeeds", mcpEvent(`{"type": "exec_command_end", "call_id": "call_26", "process_id": "5143", "command": ["/bin/bash", "-lc", "touch probe.txt"], "exit_code": 0, "duration": {"secs": 0, "nanos": 55245201}, "status": "completed"}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "call_26", Type: "command", Status: "completed", Summary: "touch probe.txt"}}},
		{"mcp command ends without its command", mcpEvent(`{"type": "exec_command_end", "call_id": "call_2", "exit_code": 0}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "call_2", Type: "command", Status: "completed"}}},
		{"mcp patch begins", mcpEvent(`{"type": "patch_apply_begin", "call_id": "call_44", "auto_approved": false, "changes": {"/w/a.txt": {"type": "add", "content": "hello\n"}, "/w/b.txt": {"type": "delete"}}}`),
			backend.Activity{Kind: backend.ActivityItem, Summary: "editing 2 files", Item: &backend.Item{ID: "call_44", Type: "file_change", Summary: "2 files", Started: true}}},
		{"mcp patch of one file", mcpEvent(`{"type": "patch_apply_begin", "call_id": "call_45", "changes": {"/w/a.txt": {}}}`),
			backend.Activity{Kind: backend.ActivityItem, Summary: "editing 1 file", Item: &backend.Item{ID: "call_45", Type: "file_change", Summary: "1 file", Started: true}}},
		{"mcp patch fails", mcpEvent(`{"type": "patch_apply_end", "call_id": "call_44", "stdout": "", "stderr": "conflict", "success": false, "changes": {}}`),
			backend.Activity{Kind: backend.ActivityItem, Summary: "patch failed", Item: &backend.Item{ID: "call_44", Type: "file_change", Status: "failed"}}},
		{"mcp tool call begins", mcpEvent(`{"type": "mcp_tool_call_begin", "call_id": "call_7", "invocation": {"server": "atm", "tool": "atm_send", "arguments": {"to": "qa"}}}`),
			backend.Activity{Kind: backend.ActivityItem, Summary: "atm.atm_send", Item: &backend.Item{ID: "call_7", Type: "tool_call", Summary: "atm.atm_send", Started: true}}},
		{"mcp tool call ends", mcpEvent(`{"type": "mcp_tool_call_end", "call_id": "call_7", "result": {"Ok": {}}}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "call_7", Type: "tool_call", Status: "completed"}}},
		{"mcp exec approval", mcpEvent(`{"type": "exec_approval_request", "call_id": "call_8", "command": "rm -rf build", "reason": "outside the sandbox"}`),
			backend.Activity{Kind: backend.ActivityApproval, Summary: "approval: rm -rf build"}},
		{"mcp patch approval", mcpEvent(`{"type": "apply_patch_approval_request", "call_id": "call_9", "changes": {}}`),
			backend.Activity{Kind: backend.ActivityApproval, Summary: "approval: patch"}},
		{"mcp message", mcpEvent(`{"type": "agent_message", "message": "  Done: sent the report.  ", "phase": null}`),
			backend.Activity{Kind: backend.ActivityMessage, Text: "  Done: sent the report.  "}},
		{"mcp message with escapes", mcpEvent(`{"type": "agent_message", "message": "line one\nsaid \"hi\" \u00e9"}`),
			backend.Activity{Kind: backend.ActivityMessage, Text: "line one\nsaid \"hi\" é"}},
		{"mcp tokens not known yet", mcpEvent(`{"type": "token_count", "info": null}`), backend.Activity{}},
		{"mcp tokens", mcpEvent(`{"type": "token_count", "info": ` + tokens + `, "rate_limits": {"primary": null}}`),
			backend.Activity{Kind: backend.ActivityTokens, Usage: &backend.Usage{InputTokens: 240, CachedInputTokens: 100, OutputTokens: 24, TotalTokens: 264, ContextTokens: 132, ContextWindow: 258400}}},
		{"mcp tokens without totals", mcpEvent(`{"type": "token_count", "info": {"model_context_window": 9}}`), backend.Activity{}},
		{"mcp error", mcpEvent(`{"type": "error", "message": "stream disconnected"}`), backend.Activity{Kind: backend.ActivityProblem, Text: "stream disconnected"}},
		{"mcp error without a message", mcpEvent(`{"type": "error"}`), backend.Activity{}},
		{"mcp stream error", mcpEvent(`{"type": "stream_error", "message": "Reconnecting... 2/5 (stream disconnected before completion)"}`),
			backend.Activity{Kind: backend.ActivityProblem, Text: "Reconnecting... 2/5 (stream disconnected before completion)", Retrying: true}},
		{"mcp background retry", mcpEvent(`{"type": "background_event", "message": "Will retry the request"}`),
			backend.Activity{Kind: backend.ActivityProblem, Text: "Will retry the request", Retrying: true}},
		{"mcp background note", mcpEvent(`{"type": "background_event", "message": "MCP server atm started"}`),
			backend.Activity{Summary: "MCP server atm started"}},
		{"mcp abort", mcpEvent(`{"type": "turn_aborted", "reason": "interrupted"}`), backend.Activity{Kind: backend.ActivityNote, Summary: "interrupted"}},
		{"mcp delta", mcpEvent(`{"type": "agent_message_content_delta", "delta": "MOCK"}`), backend.Activity{}},
		{"mcp turn complete", mcpEvent(`{"type": "task_complete", "turn_id": "turn-1", "last_agent_message": "x"}`), backend.Activity{}},
		{"mcp not json", backend.Event{Method: "codex/event", Type: "agent_message", Params: json.RawMessage(`not json`), Translate: Translate}, backend.Activity{}},

		{"app turn started", appEvent("turn/started", `{"threadId": "T", "turn": {"id": "turn-1"}}`), backend.Activity{Kind: backend.ActivityTurnStarted}},
		{"app command starts", appEvent("item/started", `{"threadId": "T", "item": {"id": "i1", "type": "commandExecution", "command": "/bin/bash -lc 'make test'", "status": "inProgress"}}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "i1", Type: "command", Status: "inProgress", Summary: "make test", Started: true}}},
		{"app command completes", appEvent("item/completed", `{"threadId": "T", "item": {"id": "i1", "type": "commandExecution", "command": "/bin/bash -lc 'echo '\\''hi'\\'''", "status": "completed"}}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "i1", Type: "command", Status: "completed", Summary: "echo 'hi'"}}},
		{"app file change", appEvent("item/started", `{"item": {"id": "i3", "type": "fileChange", "changes": [{}, {}, {}]}}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "i3", Type: "file_change", Summary: "3 files", Started: true}}},
		{"app tool call", appEvent("item/started", `{"item": {"id": "i4", "type": "mcpToolCall", "server": "atm", "tool": "atm_send", "status": "inProgress"}}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "i4", Type: "tool_call", Status: "inProgress", Summary: "atm.atm_send", Started: true}}},
		{"app message completes", appEvent("item/completed", `{"threadId": "T", "item": {"id": "i2", "type": "agentMessage", "text": "all green"}}`),
			backend.Activity{Kind: backend.ActivityMessage, Text: "all green"}},
		{"app message starts", appEvent("item/started", `{"item": {"id": "i2", "type": "agentMessage", "text": ""}}`), backend.Activity{}},
		{"app other item", appEvent("item/completed", `{"item": {"id": "i5", "type": "reasoning"}}`), backend.Activity{Summary: "reasoning"}},
		{"app item not json", appEvent("item/started", `not json`), backend.Activity{}},
		{"app tokens", appEvent("thread/tokenUsage/updated", `{"threadId": "T", "turnId": "U", "tokenUsage": {"total": {"totalTokens": 264, "inputTokens": 240, "cachedInputTokens": 100, "cacheWriteInputTokens": 0, "outputTokens": 24, "reasoningOutputTokens": 0}, "last": {"totalTokens": 132, "inputTokens": 120, "cachedInputTokens": 0, "outputTokens": 12, "reasoningOutputTokens": 0}, "modelContextWindow": 258400}}`),
			backend.Activity{Kind: backend.ActivityTokens, Usage: &backend.Usage{InputTokens: 240, CachedInputTokens: 100, OutputTokens: 24, TotalTokens: 264, ContextTokens: 132, ContextWindow: 258400}}},
		{"app tokens without totals", appEvent("thread/tokenUsage/updated", `{"threadId": "T", "tokenUsage": {"modelContextWindow": 9}}`), backend.Activity{}},
		{"app sub-agent spawned", appEvent("item/started", `{"threadId": "T", "item": {"id": "c1", "type": "collabAgentToolCall", "tool": "spawnAgent", "status": "inProgress", "senderThreadId": "T", "receiverThreadIds": ["T2"], "prompt": "hello from the parent", "agentsStates": {"T2": {"status": "pendingInit", "message": null}}}}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "c1", Type: "sub_agent", Status: "inProgress", Summary: "sub-agent spawnAgent", Started: true},
				SubAgents: []backend.SubAgent{{ThreadID: "T2", ParentThreadID: "T", Task: "hello from the parent", Status: "pendingInit"}}}},
		{"app sub-agents waited for", appEvent("item/completed", `{"item": {"id": "c2", "type": "collabAgentToolCall", "tool": "wait", "status": "completed", "receiverThreadIds": ["T3"], "agentsStates": {"T3": {"status": "completed", "message": "done"}, "T2": {"status": "running"}}}}`),
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "c2", Type: "sub_agent", Status: "completed", Summary: "sub-agent wait"},
				SubAgents: []backend.SubAgent{{ThreadID: "T2", Status: "running"}, {ThreadID: "T3", Status: "completed", Message: "done"}}}},
		{"app error, retrying", appEvent("error", `{"error":{"message":"stream disconnected before completion"},"willRetry":true,"threadId":"t"}`),
			backend.Activity{Kind: backend.ActivityProblem, Text: "stream disconnected before completion", Retrying: true}},
		{"app error", appEvent("error", `{"error":{"message":"model not found"},"willRetry":false}`), backend.Activity{Kind: backend.ActivityProblem, Text: "model not found"}},
		{"app delta", appEvent("item/agentMessage/delta", `{"delta": "hi"}`), backend.Activity{}},
		{"app turn completed", appEvent("turn/completed", `{"turn": {"id": "turn-1", "status": "completed"}}`), backend.Activity{}},

		{"neutral", backend.Event{Method: "session/update", Type: "tool_call", Params: json.RawMessage(`{}`),
			Neutral: &backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "t1", Type: "command", Summary: "ls", Started: true}}},
			backend.Activity{Kind: backend.ActivityItem, Item: &backend.Item{ID: "t1", Type: "command", Summary: "ls", Started: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.e.Activity()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Activity (-want +got):\n%s", diff)
			}
			if tt.e.Neutral != nil {
				return // translated by its backend: Translate is not asked
			}
			if diff := cmp.Diff(tt.want, Translate(tt.e)); diff != "" {
				t.Errorf("Translate, which picks the protocol by the method (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShortCommand: a command as Codex gives it, as a human reads it.
func TestShortCommand(t *testing.T) {
	long := make([]byte, 100)
	for i := range long {
		long[i] = 'x'
	}
	tests := []struct {
		raw, want string
	}{
		{`["/bin/bash", "-lc", "go test ./..."]`, "go test ./..."},
		{`["ls", "-la"]`, "ls -la"},
		{`"/bin/bash -lc 'make test'"`, "make test"},
		{`"bash -lc 'echo '\\''a'\\'''"`, "echo 'a'"},
		{`"/bin/sh -c 'true'"`, "true"},
		{`"rm -rf build"`, "rm -rf build"},
		{`"` + string(long) + `"`, string(long[:80]) + "…"},
		{`{"not": "a command"}`, "a command"},
		{``, "a command"},
	}
	for _, tt := range tests {
		if got := shortCommand(json.RawMessage(tt.raw)); got != tt.want {
			t.Errorf("shortCommand(%s) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// BenchmarkEventActivity translates a turn's worth of mcp-server events.
func BenchmarkEventActivity(b *testing.B) {
	events := []backend.Event{
		mcpEvent(`{"type": "task_started", "turn_id": "turn-1"}`),
		mcpEvent(`{"type": "agent_message_content_delta", "delta": "MOCK_REPLY"}`),
		mcpEvent(`{"type": "agent_message", "message": "MOCK_REPLY: bench", "phase": null}`),
		mcpEvent(`{"type": "token_count", "info": {"total_token_usage": {"input_tokens": 120, "total_tokens": 132}}, "rate_limits": {"primary": null}}`),
		mcpEvent(`{"type": "task_complete", "turn_id": "turn-1", "last_agent_message": "MOCK_REPLY: bench"}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range events {
			_ = e.Activity()
		}
	}
}
