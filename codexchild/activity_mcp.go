package codexchild

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"strconv"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// mcpActivity translates an mcp-server codex/event (msg.type in e.Type,
// docs/codex-wire.md#codexevent). It reads the few members it needs
// without decoding the event: it runs for every agent message and token
// count, and returns at once for the rest (deltas above all).
func mcpActivity(e backend.Event) backend.Activity {
	switch e.Type {
	case "task_started":
		return backend.Activity{Kind: backend.ActivityTurnStarted}
	case "session_configured", "stream_error", "background_event", "agent_message", "error", "turn_aborted", "token_count",
		"exec_command_begin", "exec_command_end", "patch_apply_begin", "patch_apply_end",
		"mcp_tool_call_begin", "mcp_tool_call_end", "exec_approval_request", "apply_patch_approval_request":
	default:
		return backend.Activity{}
	}
	var topBuf, msgBuf [16]jsonrpcframe.Member // no allocation for the split
	top, _ := jsonrpcframe.AppendMembers(topBuf[:0], e.Params)
	msg, ok := jsonrpcframe.AppendMembers(msgBuf[:0], jsonrpcframe.Lookup(top, "msg"))
	if !ok {
		return backend.Activity{}
	}
	str := func(name string) string {
		s, _ := jsonrpcframe.String(jsonrpcframe.Lookup(msg, name))
		return s
	}
	switch e.Type {
	case "session_configured":
		// The thread's settings as Codex took them, the model first.
		return backend.Activity{Model: str("model")}
	case "stream_error", "background_event":
		// A stream error ("Reconnecting... 2/5"), or a background event
		// that may say Codex is retrying.
		text := str("message")
		if text == "" {
			return backend.Activity{}
		}
		lower := strings.ToLower(text)
		if e.Type == "stream_error" || strings.Contains(lower, "reconnecting") || strings.Contains(lower, "retry") {
			return backend.Activity{Kind: backend.ActivityProblem, Text: text, Retrying: true}
		}
		return backend.Activity{Summary: clip(text, 200)}
	case "agent_message":
		return backend.Activity{Kind: backend.ActivityMessage, Text: str("message")}
	case "error":
		if text := clip(str("message"), 200); text != "" {
			return backend.Activity{Kind: backend.ActivityProblem, Text: text}
		}
		return backend.Activity{}
	case "turn_aborted":
		return backend.Activity{Kind: backend.ActivityNote, Summary: str("reason")}
	case "token_count":
		info := jsonrpcframe.Lookup(msg, "info")
		if len(info) == 0 || string(info) == "null" {
			return backend.Activity{}
		}
		if u, ok := codexMCPUsage(info); ok {
			return backend.Activity{Kind: backend.ActivityTokens, Usage: u}
		}
		return backend.Activity{}
	case "exec_approval_request":
		return backend.Activity{Kind: backend.ActivityApproval, Summary: "approval: " + shortCommand(jsonrpcframe.Lookup(msg, "command"))}
	case "apply_patch_approval_request":
		return backend.Activity{Kind: backend.ActivityApproval, Summary: "approval: patch"}
	}
	it := &backend.Item{ID: str("call_id")}
	a := backend.Activity{Kind: backend.ActivityItem, Item: it}
	switch e.Type {
	case "exec_command_begin":
		it.Type, it.Summary, it.Started = "command", shortCommand(jsonrpcframe.Lookup(msg, "command")), true
		a.Summary = it.Summary
	case "exec_command_end":
		it.Type, it.Status = "command", "completed"
		if cmd := jsonrpcframe.Lookup(msg, "command"); len(cmd) > 0 {
			it.Summary = shortCommand(cmd) // for an item seen only at its end
		}
		if n, err := strconv.Atoi(string(jsonrpcframe.Lookup(msg, "exit_code"))); err == nil && n != 0 {
			it.Status = "failed (exit " + strconv.Itoa(n) + ")"
		}
	case "patch_apply_begin":
		changes, _ := jsonrpcframe.Members(jsonrpcframe.Lookup(msg, "changes"))
		it.Type, it.Summary, it.Started = "file_change", files(len(changes)), true
		a.Summary = "editing " + it.Summary
	case "patch_apply_end":
		it.Type, it.Status = "file_change", "completed"
		if ok, err := strconv.ParseBool(string(jsonrpcframe.Lookup(msg, "success"))); err == nil && !ok {
			it.Status = "failed"
		}
		a.Summary = "patch " + it.Status
	case "mcp_tool_call_begin":
		inv, _ := jsonrpcframe.Members(jsonrpcframe.Lookup(msg, "invocation"))
		server, _ := jsonrpcframe.String(jsonrpcframe.Lookup(inv, "server"))
		tool, _ := jsonrpcframe.String(jsonrpcframe.Lookup(inv, "tool"))
		it.Type, it.Summary, it.Started = "tool_call", server+"."+tool, true
		a.Summary = it.Summary
	case "mcp_tool_call_end":
		it.Type, it.Status = "tool_call", "completed"
	}
	return a
}
