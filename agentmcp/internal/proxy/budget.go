package proxy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// budgetNotice tells the lead about a token budget (session.BudgetNotice)
// as the conflict radar tells it of an overlap: mail to the serve's own
// identity in the team, which reaches the lead's session like any mail
// to it (the lead push, or atm_read).
func (s *Server) budgetNotice(n session.BudgetNotice) {
	text, summary := budgetText(n, s.opts.Team)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.atm.Send(ctx, atmclient.SendRequest{From: s.opts.Identity, Team: s.opts.Team, To: s.opts.Identity, Text: text, Summary: summary})
	s.auditor.ATM("atm_send", s.opts.Identity, s.opts.Identity, text, err)
	if err != nil {
		s.log.Warn("cannot tell the lead about a token budget", "err", err)
	}
}

// budgetText is the lead's mail about a budget and its summary.
func budgetText(n session.BudgetNotice, team string) (text, summary string) {
	whose, how := n.Identity, "codex-reply or agent_reply with budget_tokens (its agent_id "+n.AgentID+")"
	if n.Team {
		whose, how = "the team "+team, "codex-reply or agent_reply with team_budget_tokens"
	}
	if !n.Exceeded {
		return fmt.Sprintf("[budget] %s has used %d of its %d-token budget (%d %%). At 100 %% no new turn starts for %s and mail waits unread, "+
				"until you raise the budget: %s.", whose, n.Used, n.Tokens, n.Percent, them(n), how),
			fmt.Sprintf("budget: %s at %d %%", whose, n.Percent)
	}
	text = fmt.Sprintf("[budget] %s has used %d of its %d-token budget: no new turn starts for %s and mail waits unread, "+
		"until you raise the budget: %s.", whose, n.Used, n.Tokens, them(n), how)
	if len(n.Interrupted) > 0 {
		text += " The running turn of " + strings.Join(n.Interrupted, ", ") + " was interrupted (budget_interrupt)."
	}
	return text, fmt.Sprintf("budget: %s used up", whose)
}

func them(n session.BudgetNotice) string {
	if n.Team {
		return "its agents"
	}
	return "it"
}
