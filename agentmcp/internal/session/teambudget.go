package session

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// TeamBudgets answers and sets the team's token budget, and what the team
// used, over every serve of the team: the team's share of the budget
// watcher (budget.go). Its methods are safe for concurrent use.
type TeamBudgets struct{ w *budgetWatch }

// TeamBudgets returns the team's budget and usage.
func (m *Manager) TeamBudgets() TeamBudgets { return TeamBudgets{m.budgets} }

// State returns the team's budget and how much of it is used (every
// session of the team in every serve, closed ones included); nil when it
// has none.
func (t TeamBudgets) State() *BudgetState {
	budget, raised := t.w.teamBudget()
	if budget <= 0 {
		return nil
	}
	return budgetState(budget, t.Usage().TotalTokens, raised)
}

// teamBudget is the team's budget: one set at run time (in the team's
// registry directory, read at most every teamBudgetFresh), else the
// configured one.
func (w *budgetWatch) teamBudget() (int64, bool) {
	m := w.m
	now := m.now()
	w.mu.Lock()
	if !w.teamRead.IsZero() && now.Sub(w.teamRead) < teamBudgetFresh {
		defer w.mu.Unlock()
		return w.team, w.teamRaised
	}
	w.mu.Unlock()
	budget, raised := m.cfg.Budgets.Team, false
	if tr, ok := m.cfg.Registry.(teamRegistry); ok {
		b, ok, err := tr.Dir().ReadTeamBudget()
		if err != nil {
			m.log.Warn("cannot read the team's budget; the configured one holds", "err", err)
		}
		if ok && b.Tokens > 0 {
			budget, raised = b.Tokens, true
		}
	}
	w.mu.Lock()
	w.team, w.teamRaised, w.teamRead = budget, raised, now
	w.mu.Unlock()
	return budget, raised
}

// Set sets the team's token budget for every serve of the team
// (codex-reply's team_budget_tokens; tokens > 0). Turns start again when
// it is above what the team used, and the mail that waited is offered.
func (t TeamBudgets) Set(tokens int64) (*BudgetState, error) {
	m := t.w.m
	tr, ok := m.cfg.Registry.(teamRegistry)
	if !ok {
		return nil, proxyerr.New(proxyerr.ErrInternal, nil, "this serve's registry keeps no team budget")
	}
	if err := tr.Dir().WriteTeamBudget(registry.TeamBudget{Tokens: tokens, By: tr.Identity(), At: m.now().UTC()}); err != nil {
		return nil, proxyerr.Wrap(proxyerr.ErrInternal, err, nil, "cannot set the team's budget: %v", err)
	}
	m.budgets.mu.Lock()
	m.budgets.team, m.budgets.teamRaised, m.budgets.teamRead = tokens, true, m.now()
	m.budgets.mu.Unlock()
	st := t.State()
	m.cfg.Audit.Append(registry.Entry{Event: "budget_set", Identity: tr.Identity(), Summary: "team " + m.cfg.Team + ": " + budgetLine(*st)})
	for identity, s := range m.Live() {
		s.budgetRaised(identity)
	}
	return st, nil
}

// Usage is the team's token usage: every session of the Manager (closed
// ones included) as it counts them, and every other serve's session of the
// team as its record says (priced where its model has a price; a session
// in two records counts once).
func (t TeamBudgets) Usage() backend.Usage {
	m := t.w.m
	var total backend.Usage
	for _, s := range m.all() {
		if u := s.Usage(); u != nil && s.Record().Team == m.cfg.Team {
			total = total.Add(*u)
		}
	}
	tr, ok := m.cfg.Registry.(teamRegistry)
	if !ok {
		return total
	}
	insts, err := tr.Dir().Scan()
	if err != nil {
		m.log.Warn("cannot read the other serves' registries for the team's usage", "err", err)
		return total
	}
	others := map[string]backend.Usage{}
	for _, in := range insts {
		if in.Identity == tr.Identity() || in.Err != nil {
			continue
		}
		for _, rec := range in.Sessions {
			if rec.Usage == nil || rec.Team != m.cfg.Team || m.Get(rec.AgentID) != nil {
				continue
			}
			u := m.cfg.Prices.Priced(rec.Model, ptr(usageOf(rec.Usage.Tokens)))
			if prev, seen := others[rec.AgentID]; !seen || u.TotalTokens > prev.TotalTokens {
				others[rec.AgentID] = *u
			}
		}
	}
	for _, u := range others {
		total = total.Add(u)
	}
	return total
}
