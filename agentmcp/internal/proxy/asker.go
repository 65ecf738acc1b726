package proxy

import (
	"context"
	"log/slog"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// asker puts approvals to a legacy client with its elicitation/create (a
// modern client is asked with multi round-trip results: the tools
// package).
type asker struct {
	c   *mcpconn.Conn
	log *slog.Logger
}

// CanAsk reports whether the client declared elicitation in initialize.
func (a asker) CanAsk() bool { return a.c.Elicitation() }

// Ask sends elicitation/create with the approval's form and reads the
// answer (session.ElicitAnswer: cancel is a denial, never an abort). A
// client's error response is a denial; a failed request is an error.
func (a asker) Ask(ctx context.Context, q session.Question) (session.Answer, error) {
	resp, err := a.c.Request(ctx, "elicitation/create", session.ApprovalForm(q))
	if err != nil {
		return session.Answer{}, err
	}
	if resp.Error != nil {
		a.log.Warn("client answered the approval with an error; denying", "agent_id", q.AgentID, "error", string(resp.Error))
		return session.Answer{Decision: backend.Decision{Kind: backend.Deny, Reason: "the client could not show the approval request"},
			Outcome: "denied: client error"}, nil
	}
	return session.ElicitAnswer(resp.Result), nil
}
