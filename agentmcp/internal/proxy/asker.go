package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
)

// dismissed is what the agent reads when the client cancels an approval
// request (a headless client does so at once).
const dismissed = "the approval request was dismissed without an answer; the action was not run"

// asker puts approvals to the user with the client's elicitation/create.
type asker struct {
	c   *mcpconn.Conn
	log *slog.Logger
}

// CanAsk reports whether the client declared elicitation.
func (a asker) CanAsk() bool { return a.c.Elicitation() }

// Ask sends elicitation/create with the approval's form and reads the
// answer: accept (approve, or approve for the session), decline (deny, with
// the user's reason) or cancel (deny, telling the agent the request was
// dismissed). Cancel never ends the turn: headless clients (claude -p, the
// Agent SDK) cancel every elicitation, and a turn that died of it would be
// lost; stopping a turn is agent_interrupt. A client's error response is a
// denial; a failed request is an error.
func (a asker) Ask(ctx context.Context, q session.Question) (session.Answer, error) {
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
	resp, err := a.c.Request(ctx, "elicitation/create", params)
	if err != nil {
		return session.Answer{}, err
	}
	if resp.Error != nil {
		a.log.Warn("client answered the approval with an error; denying", "agent_id", q.AgentID, "error", string(resp.Error))
		return session.Answer{Decision: codexchild.Decision{Kind: codexchild.Deny, Reason: "the client could not show the approval request"},
			Outcome: "denied: client error"}, nil
	}
	var r struct {
		Action  string `json:"action"`
		Content struct {
			ApproveForSession bool   `json:"approve_for_session"`
			Reason            string `json:"reason"`
			Decision          string `json:"decision"`
		} `json:"content"`
	}
	_ = json.Unmarshal(resp.Result, &r)
	switch r.Action {
	case "accept":
		if r.Content.ApproveForSession || r.Content.Decision == "approved_for_session" {
			return session.Answer{Decision: codexchild.Decision{Kind: codexchild.ApproveForSession}, Outcome: "approved for session"}, nil
		}
		return session.Answer{Decision: codexchild.Decision{Kind: codexchild.Approve}, Outcome: "approved"}, nil
	case "cancel":
		return session.Answer{Decision: codexchild.Decision{Kind: codexchild.Deny, Reason: dismissed}, Outcome: "denied: the client cancelled the request"}, nil
	}
	// "decline" and anything unknown
	reason := strings.TrimSpace(r.Content.Reason)
	if reason == "" {
		reason = "declined by the user"
	}
	return session.Answer{Decision: codexchild.Decision{Kind: codexchild.Deny, Reason: reason}, Outcome: "denied: " + reason}, nil
}
