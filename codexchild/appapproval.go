package codexchild

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// This file maps app-server approval requests to typed Approvals and the
// backend's decisions to what the app-server understands, and decides the
// answers to the other server requests. The measured behaviour is in the
// docs/codex-wire.md#app-server-approvals: the answer is {"decision": ...}; a bad answer
// or a JSON-RPC error fails the item but does not hang the turn.

// appDecision returns the result for an approval request of the given
// method:
//
//	                   item/*/requestApproval   execCommandApproval, applyPatchApproval (legacy)
//	Approve            "accept"                 "approved"
//	ApproveForSession  "acceptForSession"       "approved_for_session"
//	Deny               "decline"                {"denied":{"rejection":R}}
//	Abort              "cancel"                 "abort"
//
// The app-server's "decline" carries no reason: the model is told "rejected
// by user". "cancel" also interrupts the turn. An unknown kind is a denial.
func appDecision(method string, d backend.Decision) map[string]any {
	legacy := method == "execCommandApproval" || method == "applyPatchApproval"
	var v any
	switch d.Kind {
	case backend.Approve:
		v = pick(legacy, "approved", "accept")
	case backend.ApproveForSession:
		v = pick(legacy, "approved_for_session", "acceptForSession")
	case backend.Abort:
		v = pick(legacy, "abort", "cancel")
	default:
		if legacy {
			reason := d.Reason
			if reason == "" {
				reason = defaultDenyReason
			}
			v = map[string]any{"denied": map[string]any{"rejection": reason}}
		} else {
			v = "decline"
		}
	}
	return map[string]any{"decision": v}
}

func pick(legacy bool, old, cur string) string {
	if legacy {
		return old
	}
	return cur
}

// appApprovalParams are the members of the approval requests that the
// backend reads (v2 item/*/requestApproval and the legacy v1 requests).
type appApprovalParams struct {
	ThreadID       string          `json:"threadId"`
	TurnID         string          `json:"turnId"`
	ItemID         string          `json:"itemId"`
	Reason         string          `json:"reason"`
	Command        json.RawMessage `json:"command"` // v2: a string; v1: argv
	Cwd            string          `json:"cwd"`
	ConversationID string          `json:"conversationId"` // v1
	CallID         string          `json:"callId"`         // v1
	FileChanges    json.RawMessage `json:"fileChanges"`    // v1
}

// approvalFromAppRequest builds the typed Approval (without ID and
// responder) from an approval request; ok is false for other requests. A
// v2 patch approval carries no changes: they come from the preceding
// item/started fileChange item (the reader fills them in).
func approvalFromAppRequest(method string, raw json.RawMessage) (a backend.Approval, ok bool) {
	switch method {
	case "item/commandExecution/requestApproval", "execCommandApproval":
		a.Kind = backend.ApprovalExec
	case "item/fileChange/requestApproval", "applyPatchApproval":
		a.Kind = backend.ApprovalPatch
	default:
		return backend.Approval{}, false
	}
	var p appApprovalParams
	_ = json.Unmarshal(raw, &p)
	a.ThreadID, a.TurnID, a.CallID = p.ThreadID, p.TurnID, p.ItemID
	if a.ThreadID == "" {
		a.ThreadID = p.ConversationID
	}
	if a.CallID == "" {
		a.CallID = p.CallID
	}
	a.Reason, a.Cwd = p.Reason, p.Cwd
	a.Command = appCommandLine(p.Command)
	if len(p.FileChanges) > 0 && string(p.FileChanges) != "null" {
		a.Changes = p.FileChanges
	}
	a.Raw = raw
	return a, true
}

// appCommandLine turns the command of an approval request into the line
// the model asked to run: an argv as commandLine does, and a string such as
// "/bin/bash -lc 'touch a'" without its shell wrapper when the script is one
// single-quoted word.
func appCommandLine(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return commandLine(raw)
	}
	for _, prefix := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c ", "/bin/zsh -lc ", "zsh -lc "} {
		rest, ok := strings.CutPrefix(s, prefix)
		if !ok {
			continue
		}
		if script, ok := unquoteSingle(rest); ok {
			return script
		}
		if !strings.ContainsAny(rest, " \t\n'\"\\$`*?;&|<>()") {
			return rest
		}
	}
	return s
}

// unquoteSingle undoes POSIX single quoting of one word ('a'\”b' → a'b).
func unquoteSingle(s string) (string, bool) {
	var b strings.Builder
	for s != "" {
		switch {
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		default:
			return "", false
		}
	}
	return b.String(), true
}

// otherRequestAnswer answers a server request that is not an approval the
// proxy can show. Each answer is one Codex accepts and that refuses:
//
//	mcpServer/elicitation/request     {"action":"decline"} (an MCP server's question; tool
//	                                  servers of the proxy are configured to need none)
//	item/tool/requestUserInput        {"answers":{}} (no answers)
//	item/permissions/requestApproval  {"permissions":{},"scope":"turn"} (nothing granted)
//	item/tool/call                    {"contentItems":[{"type":"inputText","text":...}],"success":false}
//	                                  (the proxy registers no dynamic tools)
//	anything else                     JSON-RPC error -32601 (account/chatgptAuthTokens/refresh,
//	                                  attestation/generate, unknown methods); the app-server
//	                                  treats an error answer as a failed request, it does not hang
func otherRequestAnswer(m *jsonrpcframe.Message) *jsonrpcframe.Message {
	var result any
	switch m.Method {
	case "mcpServer/elicitation/request":
		result = map[string]any{"action": "decline", "content": nil}
	case "item/tool/requestUserInput":
		result = map[string]any{"answers": map[string]any{}}
	case "item/permissions/requestApproval":
		result = map[string]any{"permissions": map[string]any{}, "scope": "turn"}
	case "item/tool/call":
		result = map[string]any{"success": false, "contentItems": []any{
			map[string]any{"type": "inputText", "text": "dynamic tools are not supported by atm-agent-mcp"}}}
	default:
		return jsonrpcframe.NewErrorResponse(m.ID, &jsonrpcframe.Error{
			Code: jsonrpcframe.CodeMethodNotFound, Message: fmt.Sprintf("not supported by atm-agent-mcp: %s", m.Method)})
	}
	resp, err := jsonrpcframe.NewResponse(m.ID, result)
	if err != nil { // maps of plain values always marshal
		panic(fmt.Sprintf("codexchild: marshal answer: %v", err))
	}
	return resp
}

// tellDenial steers the thread's running turn with a denial's note; a
// turn that has ended (or cannot be steered) gets it in the thread's next
// prompt instead.
func (b *AppServer) tellDenial(threadID, note string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Steer(ctx, threadID, note); err != nil {
		b.log.Info("codex: the denial's reason goes with the thread's next prompt", "thread", threadID, "err", err)
		b.notes.add(threadID, note)
	}
}
