package session

import (
	"encoding/json"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// Dismissed is what the agent reads when the client cancels an approval
// request (a headless client does so at once, asking nobody).
const Dismissed = "the approval request was dismissed without an answer: the MCP client cancelled it " +
	"(a headless client such as claude -p does so without asking anyone); the action was not run"

// declinedNoReason is what the agent reads when the client declines an
// approval without giving a reason.
const declinedNoReason = "declined in the MCP client, without a reason"

// ApprovalForm is the params of the elicitation/create that asks q, in
// either revision (a request to a legacy client, an input request of a
// multi round-trip result to a modern one): the message, the form (approve
// for the session, a reason to decline) and what the approval is about.
func ApprovalForm(q Question) map[string]any {
	ap := q.Approval
	params := map[string]any{
		"message": q.Message,
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve_for_session": map[string]any{"type": "boolean", "title": "Approve for the rest of this session", "default": false},
				"reason":              map[string]any{"type": "string", "title": "Reason (shown to the agent when you decline)"},
			},
		},
		"agent_id": q.AgentID, "identity": q.Identity, "threadId": ap.ThreadID, "approval_id": q.ApprovalID,
		"kind": string(ap.Kind), "command": ap.Command, "cwd": ap.Cwd, "reason": ap.Reason,
	}
	if len(ap.Changes) > 0 {
		params["changes"] = ap.Changes
	}
	if q.RequestID != nil {
		params["requestId"] = q.RequestID
	}
	return params
}

// ElicitAnswer reads the client's answer to an ApprovalForm (an
// elicitation result): accept approves (for the session when the form says
// so), decline denies with the user's reason, cancel denies telling the
// agent the request was dismissed. Cancel never ends the turn: headless
// clients (claude -p, the Agent SDK) cancel every elicitation, and a turn
// that died of it would be lost; stopping a turn is agent_interrupt.
// Anything else is a decline.
func ElicitAnswer(result json.RawMessage) Answer {
	var r struct {
		Action  string `json:"action"`
		Content struct {
			ApproveForSession bool   `json:"approve_for_session"`
			Reason            string `json:"reason"`
			Decision          string `json:"decision"`
		} `json:"content"`
	}
	_ = json.Unmarshal(result, &r)
	switch r.Action {
	case "accept":
		if r.Content.ApproveForSession || r.Content.Decision == "approved_for_session" {
			return Answer{Decision: backend.Decision{Kind: backend.ApproveForSession}, Outcome: "approved for session"}
		}
		return Answer{Decision: backend.Decision{Kind: backend.Approve}, Outcome: "approved"}
	case "cancel":
		return Answer{Decision: backend.Decision{Kind: backend.Deny, Reason: Dismissed}, Outcome: "denied: the client cancelled the request"}
	}
	reason := strings.TrimSpace(r.Content.Reason)
	if reason == "" {
		reason = declinedNoReason
	}
	return Answer{Decision: backend.Decision{Kind: backend.Deny, Reason: reason}, Outcome: "denied: " + reason}
}
