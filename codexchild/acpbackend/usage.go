package acpbackend

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// An ACP agent reports its usage in two pieces: each turn's tokens in the
// answer to session/prompt (its usage member), and the session's cost so
// far and its context fill in usage_update notifications. The backend adds
// them up per thread into the seam's one Usage of every kind: totals so far, as
// Codex reports its own.

// withUpdate returns u with a usage_update's cost (the session's so far,
// not added) and context fill.
func withUpdate(u backend.Usage, up *acp.Usage) backend.Usage {
	if up == nil {
		return u
	}
	u.ContextTokens, u.ContextWindow = up.Used, up.Size
	if up.Cost != nil {
		u.Cost = &backend.Cost{Amount: up.Cost.Amount, Currency: up.Cost.Currency}
	}
	return u
}

// withTurn returns u with one turn's tokens added. Thought tokens count as
// output, as Codex counts reasoning; a total the agent left out is input
// plus output.
func withTurn(u backend.Usage, t *acp.TurnTokens) backend.Usage {
	if t == nil {
		return u
	}
	total := t.TotalTokens
	if total == 0 {
		total = t.InputTokens + t.OutputTokens + t.ThoughtTokens
	}
	u.InputTokens += t.InputTokens
	u.CachedInputTokens += t.CachedReadTokens
	u.OutputTokens += t.OutputTokens + t.ThoughtTokens
	u.TotalTokens += total
	return u
}
