package tools

import (
	"context"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// budgetArgNames are the arguments of codex-reply and agent_reply that
// set a token budget before the turn: the session's (budget_tokens, kept
// over a resume) and the team's (team_budget_tokens, for every serve of
// the team). A budget used up refuses the turn (BUDGET_EXCEEDED) and says
// to raise it so; the reply that raises it is the one that goes on.
var budgetArgNames = []string{"budget_tokens", "team_budget_tokens"}

// budgets reads the call's budget arguments: each a positive integer, 0
// when not given.
func budgets(a mcpconn.Args) (sessionTokens, teamTokens int64, err error) {
	for _, b := range []struct {
		name string
		v    *int64
	}{{"budget_tokens", &sessionTokens}, {"team_budget_tokens", &teamTokens}} {
		n, set, err := a.Int(b.name)
		if err != nil {
			return 0, 0, err
		}
		if set && n < 1 {
			return 0, 0, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": b.name}, "argument %q must be at least 1 (tokens)", b.name)
		}
		*b.v = int64(n)
	}
	return sessionTokens, teamTokens, nil
}

// setBudgets sets the budgets a reply's arguments give, before its turn.
func (e *Env) setBudgets(ctx context.Context, s *session.Session, sessionTokens, teamTokens int64) error {
	if sessionTokens == 0 && teamTokens == 0 {
		return nil
	}
	mcpconn.Release(ctx) // the registry is written
	if sessionTokens > 0 {
		s.SetBudget(sessionTokens)
	}
	if teamTokens > 0 {
		if _, err := e.m.TeamBudgets().Set(teamTokens); err != nil {
			return err
		}
	}
	return nil
}
