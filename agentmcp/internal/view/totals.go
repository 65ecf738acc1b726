package view

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// The team's totals count every session of the team, not only those a
// feed shows: a session closed before the view started, or run by a serve
// that is gone, counts as its registry record says (each serve keeps a
// session's usage in its record, package session). The feeds' agents are
// counted as they say (they are live, and newer than a record); the
// records add those no feed shows. The team's budget is the configured one
// unless one was set at run time (the team's registry directory).

// Totals are what the team's registry adds to the feeds' agents, and the
// team's budget.
type Totals struct {
	// Recorded is the usage of the team's sessions that no feed shows, as
	// their records say (priced where their model has a price); nil when
	// none reported any.
	Recorded *backend.Usage `json:"recorded,omitempty"`
	// RecordedSessions is how many sessions Recorded adds up.
	RecordedSessions int `json:"recorded_sessions"`
	// Budget is the team's token budget; 0 means none. Raised: set at run
	// time (codex-reply team_budget_tokens), not configured.
	Budget int64 `json:"budget_tokens,omitempty"`
	Raised bool  `json:"raised,omitempty"`
}

// Spent is the team's usage: every agent of the snapshot (as its feed
// says) and what the registry adds.
func (s Snapshot) Spent() backend.Usage {
	var u backend.Usage
	for _, a := range s.Agents {
		if a.Usage != nil {
			u = u.Add(*a.Usage)
		}
	}
	if r := s.Totals.Recorded; r != nil {
		u = u.Add(*r)
	}
	u.ContextTokens, u.ContextWindow = 0, 0 // a context is one session's
	return u
}

// totals reads the registries for the sessions of the team that none of
// shown (by agent_id) has, and the team's budget.
func (t *Team) totals(shown map[string]bool) Totals {
	out := Totals{Budget: t.cfg.Budget}
	seen := map[string]backend.Usage{}
	for _, d := range t.cfg.Registries {
		if b, ok, err := d.ReadTeamBudget(); err == nil && ok && b.Tokens > 0 {
			out.Budget, out.Raised = b.Tokens, true
		}
		insts, err := d.Scan()
		if err != nil {
			t.log.Debug("cannot read the team's registry", "dir", d.Path(), "err", err)
			continue
		}
		for _, in := range insts {
			for _, rec := range in.Sessions {
				if rec.Usage == nil || shown[rec.AgentID] || t.cfg.Team != "" && rec.Team != t.cfg.Team {
					continue
				}
				u := t.cfg.Prices.Priced(rec.Model, recordUsage(rec.Usage))
				if prev, ok := seen[rec.AgentID]; !ok || u.TotalTokens > prev.TotalTokens {
					seen[rec.AgentID] = *u // a session in two records counts once
				}
			}
		}
	}
	for _, u := range seen {
		if out.Recorded == nil {
			out.Recorded = &backend.Usage{}
		}
		*out.Recorded = out.Recorded.Add(u)
		out.RecordedSessions++
	}
	return out
}

// recordUsage is a record's usage in the one shape of every kind.
func recordUsage(r *registry.Usage) *backend.Usage {
	u := &backend.Usage{InputTokens: r.InputTokens, CachedInputTokens: r.CachedInputTokens, OutputTokens: r.OutputTokens, TotalTokens: r.TotalTokens}
	if r.Cost != nil {
		u.Cost = &backend.Cost{Amount: r.Cost.Amount, Currency: r.Cost.Currency}
	}
	return u
}

// budgetOf is the team's budget and its use in a snapshot; nil without a
// budget.
func budgetOf(s Snapshot) *session.BudgetState {
	if s.Totals.Budget <= 0 {
		return nil
	}
	used := s.Spent().TotalTokens
	return &session.BudgetState{Tokens: s.Totals.Budget, Used: used, Percent: int(used * 100 / s.Totals.Budget),
		Exceeded: used >= s.Totals.Budget, Raised: s.Totals.Raised}
}

// refreshTotals reads the totals again and publishes them when they
// changed.
func (t *Team) refreshTotals() {
	if len(t.cfg.Registries) == 0 && t.cfg.Budget == 0 {
		return
	}
	t.mu.Lock()
	shown := make(map[string]bool, len(t.agents))
	for _, a := range t.agents {
		shown[a.AgentID] = true
	}
	t.mu.Unlock()
	tot := t.totals(shown)
	t.mu.Lock()
	defer t.mu.Unlock()
	if equalTotals(t.tot, tot) {
		return
	}
	t.tot = tot
	cp := tot
	t.publishLocked(Update{Type: "totals", Totals: &cp})
}

func equalTotals(a, b Totals) bool {
	if a.Budget != b.Budget || a.Raised != b.Raised || a.RecordedSessions != b.RecordedSessions || (a.Recorded == nil) != (b.Recorded == nil) {
		return false
	}
	if a.Recorded == nil {
		return true
	}
	x, y := *a.Recorded, *b.Recorded
	if (x.Cost == nil) != (y.Cost == nil) || x.Cost != nil && *x.Cost != *y.Cost {
		return false
	}
	x.Cost, y.Cost = nil, nil
	return x == y
}
