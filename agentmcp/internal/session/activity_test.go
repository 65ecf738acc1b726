package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// mcpEvent is a codex/event of mcp-server with msg as recorded from Codex
// 0.153.4 (docs/codex-wire.md#codexevent).
func mcpEvent(msg string) backend.Event {
	var m struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(msg), &m)
	params := `{"_meta": {"requestId": 3, "threadId": "T"}, "id": "turn-1", "msg": ` + msg + `}`
	return backend.Event{Method: "codex/event", Type: m.Type, Params: json.RawMessage(params), Translate: codexchild.Translate}
}

// appEvent is an app-server notification.
func appEvent(method, params string) backend.Event {
	return backend.Event{Method: method, Type: method, Params: json.RawMessage(params), Translate: codexchild.Translate}
}

// neutralEvent is an event a backend translated as it read it (ACP).
func neutralEvent(typ string, a backend.Activity) backend.Event {
	return backend.Event{Method: "session/update", Type: typ, Params: json.RawMessage(`{}`), Neutral: &a}
}

// TestActivityRecord: what agent_status reports of a turn's events — the
// summary of each event, the turn's items, agent messages and token usage —
// for both Codex protocols' event shapes (translated by codexchild) and
// for events a backend translated itself (Event.Neutral).
func TestActivityRecord(t *testing.T) {
	type want struct {
		summaries []string
		items     []turnItem
		messages  []string
		tokens    *backend.Usage
	}
	tests := []struct {
		name   string
		events []backend.Event
		want   want
	}{
		{
			name: "command that fails",
			events: []backend.Event{
				mcpEvent(`{"type": "task_started", "turn_id": "turn-1"}`),
				mcpEvent(`{"type": "exec_command_begin", "call_id": "call_1", "turn_id": "turn-1", "command": ["/bin/bash", "-lc", "go test ./..."], "cwd": "/w"}`),
				mcpEvent(`{"type": "exec_command_end", "call_id": "call_1", "command": ["/bin/bash", "-lc", "go test ./..."], "stdout": "FAIL", "exit_code": 1, "status": "completed"}`),
			},
			want: want{
				summaries: []string{"", "go test ./...", "go test ./...: failed (exit 1)"},
				items:     []turnItem{{ID: "call_1", Type: "command", Status: "failed (exit 1)", Summary: "go test ./..."}},
			},
		},
		{
			name: "command that succeeds, seen only at its end",
			events: []backend.Event{
				mcpEvent(`{"type": "exec_command_end", "call_id": "call_26", "process_id": "5143", "command": ["/bin/bash", "-lc", "touch probe.txt"], "exit_code": 0, "duration": {"secs": 0, "nanos": 55245201}, "status": "completed"}`),
			},
			want: want{
				summaries: []string{"touch probe.txt: completed"},
				items:     []turnItem{{ID: "call_26", Type: "command", Status: "completed", Summary: "touch probe.txt"}},
			},
		},
		{
			name: "patch that fails",
			events: []backend.Event{
				mcpEvent(`{"type": "patch_apply_begin", "call_id": "call_44", "auto_approved": false, "changes": {"/w/a.txt": {"type": "add", "content": "hello\n"}, "/w/b.txt": {"type": "delete"}}}`),
				mcpEvent(`{"type": "patch_apply_end", "call_id": "call_44", "stdout": "", "stderr": "conflict", "success": false, "changes": {}}`),
			},
			want: want{
				summaries: []string{"editing 2 files", "patch failed"},
				items:     []turnItem{{ID: "call_44", Type: "file_change", Status: "failed", Summary: "2 files"}},
			},
		},
		{
			name: "tool call, approval, messages, tokens, error, abort",
			events: []backend.Event{
				mcpEvent(`{"type": "mcp_tool_call_begin", "call_id": "call_7", "invocation": {"server": "atm", "tool": "atm_send", "arguments": {"to": "qa"}}}`),
				mcpEvent(`{"type": "mcp_tool_call_end", "call_id": "call_7", "result": {"Ok": {}}}`),
				mcpEvent(`{"type": "exec_approval_request", "call_id": "call_8", "command": "rm -rf build", "reason": "outside the sandbox"}`),
				mcpEvent(`{"type": "agent_message", "message": "  Done: sent the report.  ", "phase": null}`),
				mcpEvent(`{"type": "token_count", "info": null}`),
				mcpEvent(`{"type": "token_count", "info": {"total_token_usage": {"input_tokens": 120, "total_tokens": 132}}}`),
				mcpEvent(`{"type": "error", "message": "stream disconnected"}`),
				mcpEvent(`{"type": "turn_aborted", "reason": "interrupted"}`),
			},
			want: want{
				summaries: []string{"atm.atm_send", "atm.atm_send: completed", "approval: rm -rf build", "Done: sent the report.", "", "", "stream disconnected", "interrupted"},
				items:     []turnItem{{ID: "call_7", Type: "tool_call", Status: "completed", Summary: "atm.atm_send"}},
				messages:  []string{"Done: sent the report."},
				tokens:    &backend.Usage{InputTokens: 120, TotalTokens: 132},
			},
		},
		{
			name: "message with escapes",
			events: []backend.Event{
				mcpEvent(`{"type": "agent_message", "message": "line one\nsaid \"hi\" \u00e9"}`),
			},
			want: want{
				summaries: []string{"line one\nsaid \"hi\" é"},
				messages:  []string{"line one\nsaid \"hi\" é"},
			},
		},
		{
			name: "app-server items",
			events: []backend.Event{
				appEvent("turn/started", `{"threadId": "T", "turn": {"id": "turn-1"}}`),
				appEvent("item/started", `{"threadId": "T", "item": {"id": "i1", "type": "commandExecution", "command": "/bin/bash -lc 'make test'", "status": "inProgress"}}`),
				appEvent("item/completed", `{"threadId": "T", "item": {"id": "i1", "type": "commandExecution", "command": "/bin/bash -lc 'make test'", "status": "completed"}}`),
				appEvent("item/completed", `{"threadId": "T", "item": {"id": "i2", "type": "agentMessage", "text": "all green"}}`),
				appEvent("thread/tokenUsage/updated", `{"threadId": "T", "tokenUsage": {"total": {"totalTokens": 9}}}`),
			},
			want: want{
				summaries: []string{"", "make test: inProgress", "make test: completed", "all green", ""},
				items:     []turnItem{{ID: "i1", Type: "command", Status: "completed", Summary: "make test"}},
				messages:  []string{"all green"},
				tokens:    &backend.Usage{TotalTokens: 9},
			},
		},
		{
			name: "retry notice, then a new turn forgets the items and the problem",
			events: []backend.Event{
				mcpEvent(`{"type": "exec_command_begin", "call_id": "c1", "command": ["ls"]}`),
				mcpEvent(`{"type": "stream_error", "message": "Reconnecting... 2/5"}`),
				mcpEvent(`{"type": "background_event", "message": "MCP server atm started"}`),
				mcpEvent(`{"type": "task_started", "turn_id": "turn-2"}`),
			},
			want: want{
				summaries: []string{"ls", "Reconnecting... 2/5", "MCP server atm started", ""},
			},
		},
		{
			name: "another agent's events, translated by its backend",
			events: []backend.Event{
				neutralEvent("turn", backend.Activity{Kind: backend.ActivityTurnStarted}),
				neutralEvent("tool_call", backend.Activity{Kind: backend.ActivityItem,
					Item: &backend.Item{ID: "toolu_1", Type: "command", Status: "pending", Summary: "npm test", Started: true}}),
				neutralEvent("tool_call_update", backend.Activity{Kind: backend.ActivityItem,
					Item: &backend.Item{ID: "toolu_1", Status: "completed"}}),
				neutralEvent("agent_message_chunk", backend.Activity{}),
				neutralEvent("agent_message", backend.Activity{Kind: backend.ActivityMessage, Text: "tests pass"}),
				neutralEvent("usage_update", backend.Activity{Kind: backend.ActivityTokens, Usage: &backend.Usage{TotalTokens: 120, ContextTokens: 120}}),
				neutralEvent("plan", backend.Activity{Kind: backend.ActivityNote, Summary: "plan: 2 steps"}),
			},
			want: want{
				summaries: []string{"", "npm test: pending", "npm test: completed", "", "tests pass", "", "plan: 2 steps"},
				items:     []turnItem{{ID: "toolu_1", Type: "command", Status: "completed", Summary: "npm test"}},
				messages:  []string{"tests pass"},
				tokens:    &backend.Usage{TotalTokens: 120, ContextTokens: 120},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a activity
			for _, e := range tt.events {
				a.record(e.Type, "T", e.Activity(), time.Unix(0, 0))
			}
			var got want
			for _, r := range a.events(0) {
				got.summaries = append(got.summaries, r.Summary)
			}
			for _, it := range a.items {
				got.items = append(got.items, *it)
			}
			got.messages = a.messages
			got.tokens = a.usage.total()
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{}), cmpopts.IgnoreUnexported(turnItem{})); diff != "" {
				t.Errorf("activity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUsageTotals: a session's usage over its threads: each report is a
// thread's totals so far; a new thread, or totals that go down (a new
// process counting afresh), start a new count added to the earlier ones.
func TestUsageTotals(t *testing.T) {
	usd := func(a float64) *backend.Usage {
		return &backend.Usage{Cost: &backend.Cost{Amount: a, Currency: "USD"}}
	}
	type report struct {
		thread string
		u      backend.Usage
	}
	tests := []struct {
		name    string
		reports []report
		want    *backend.Usage
	}{
		{"none", nil, nil},
		{"one thread, totals so far", []report{{"A", backend.Usage{InputTokens: 120, OutputTokens: 12, TotalTokens: 132}}, {"A", backend.Usage{InputTokens: 240, OutputTokens: 24, TotalTokens: 264}}},
			&backend.Usage{InputTokens: 240, OutputTokens: 24, TotalTokens: 264}},
		{"a second thread adds", []report{{"A", backend.Usage{InputTokens: 240, TotalTokens: 264}}, {"B", backend.Usage{InputTokens: 120, TotalTokens: 132}}},
			&backend.Usage{InputTokens: 360, TotalTokens: 396}},
		{"a thread counting afresh adds", []report{{"A", backend.Usage{TotalTokens: 264}}, {"A", backend.Usage{TotalTokens: 132}}},
			&backend.Usage{TotalTokens: 396}},
		{"costs of two threads add", []report{{"A", *usd(0.5)}, {"B", *usd(0.25)}}, usd(0.75)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u usageTotals
			for _, r := range tt.reports {
				u.report(r.thread, r.u)
			}
			if d := cmp.Diff(tt.want, u.total()); d != "" {
				t.Errorf("total (-want +got):\n%s", d)
			}
		})
	}
}

// BenchmarkActivityRecord records a turn's worth of mcp-server events.
func BenchmarkActivityRecord(b *testing.B) {
	events := []backend.Event{
		mcpEvent(`{"type": "task_started", "turn_id": "turn-1"}`),
		mcpEvent(`{"type": "agent_message_content_delta", "delta": "MOCK_REPLY"}`),
		mcpEvent(`{"type": "agent_message", "message": "MOCK_REPLY: bench", "phase": null}`),
		mcpEvent(`{"type": "token_count", "info": {"total_token_usage": {"input_tokens": 120, "total_tokens": 132}}, "rate_limits": {"primary": null}}`),
		mcpEvent(`{"type": "task_complete", "turn_id": "turn-1", "last_agent_message": "MOCK_REPLY: bench"}`),
	}
	var a activity
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range events {
			a.record(e.Type, "T", e.Activity(), time.Time{})
		}
	}
}
