package codexchild

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// This file maps the backend's approval decisions to what codex mcp-server
// understands, and Codex's elicitation/create requests to typed Approvals.
// The measured behaviour is in docs/codex-wire.md#elicitation-answers: Codex reads
// only a top-level "decision"; the MCP-standard {"action": ...} alone is
// treated as "not approved", and a JSON-RPC error hangs the turn forever.

// defaultDenyReason is the rejection shown to the model when a denial has no
// reason.
const defaultDenyReason = "denied by the user"

// mcpDecision returns the elicitation/create result for d, for the Codex
// version the handshake reported:
//
//	Approve           {"action":"accept","content":{},"decision":"approved"}
//	ApproveForSession {"action":"accept","content":{},"decision":"approved_for_session"}
//	Deny (0.153.x+)   {"action":"decline","decision":{"denied":{"rejection":R}}}
//	Deny (older)      {"action":"decline","decision":"denied"}
//	Abort             {"action":"cancel","decision":"abort"}
//
// The "action" members keep the answer a valid MCP elicitation result; Codex
// ignores them. An unknown kind is a denial, never an error.
func mcpDecision(version string, d backend.Decision) json.RawMessage {
	var v any
	switch d.Kind {
	case backend.Approve:
		v = map[string]any{"action": "accept", "content": map[string]any{}, "decision": "approved"}
	case backend.ApproveForSession:
		v = map[string]any{"action": "accept", "content": map[string]any{}, "decision": "approved_for_session"}
	case backend.Abort:
		v = map[string]any{"action": "cancel", "decision": "abort"}
	default:
		reason := d.Reason
		if reason == "" {
			reason = defaultDenyReason
		}
		if structuredDenial(version) {
			v = map[string]any{"action": "decline", "decision": map[string]any{"denied": map[string]any{"rejection": reason}}}
		} else {
			v = map[string]any{"action": "decline", "decision": "denied"}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("codexchild: marshal decision: %v", err)) // maps of strings always marshal
	}
	return b
}

// structuredDenial reports whether a Codex version wants the struct form of
// a denial ({"denied":{"rejection":R}}): 0.153 and later do (0.153.4 was
// measured; the string form is a parse error there), 0.104 wants "denied".
// An unknown or unparsable version gets the struct form: the current one.
func structuredDenial(version string) bool {
	major, minor, ok := parseVersion(version)
	if !ok {
		return true
	}
	return major > 0 || minor >= 153
}

// parseVersion reads "MAJOR.MINOR[.PATCH[-pre]]".
func parseVersion(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// elicitationParams are the members of Codex's elicitation/create params
// that the backend reads.
type elicitationParams struct {
	Message     string          `json:"message"`
	ThreadID    string          `json:"threadId"`
	Elicitation string          `json:"codex_elicitation"` // exec-approval | patch-approval
	ToolCallID  string          `json:"codex_mcp_tool_call_id"`
	EventID     string          `json:"codex_event_id"`
	CallID      string          `json:"codex_call_id"`
	Command     json.RawMessage `json:"codex_command"` // []string
	Cwd         string          `json:"codex_cwd"`
	Reason      string          `json:"codex_reason"` // not sent by 0.153.4; the reason comes with the event
	Changes     json.RawMessage `json:"codex_changes"`
}

// approvalFromElicitation builds the typed Approval (without a responder)
// from an elicitation/create params object. ok is false when the request is
// not a Codex approval.
func approvalFromElicitation(raw json.RawMessage) (a backend.Approval, p elicitationParams, ok bool) {
	if err := json.Unmarshal(raw, &p); err != nil {
		return backend.Approval{}, p, false
	}
	switch p.Elicitation {
	case "exec-approval":
		a.Kind = backend.ApprovalExec
	case "patch-approval":
		a.Kind = backend.ApprovalPatch
	default:
		return backend.Approval{}, p, false
	}
	a.ThreadID = p.ThreadID
	a.TurnID = p.EventID
	a.CallID = p.CallID
	a.Message = p.Message
	a.Command = commandLine(p.Command)
	a.Cwd = p.Cwd
	a.Reason = p.Reason
	if len(p.Changes) > 0 && string(p.Changes) != "null" {
		a.Changes = p.Changes
	}
	a.Raw = raw
	return a, p, true
}

// commandLine turns Codex's argv into one line. A "bash -lc SCRIPT" wrapper
// becomes the script itself, which is what the model asked to run.
func commandLine(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var argv []string
	if err := json.Unmarshal(raw, &argv); err != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	}
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") && strings.HasSuffix(argv[0], "sh") {
		return argv[2]
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted[i] = a
	}
	return strings.Join(quoted, " ")
}
