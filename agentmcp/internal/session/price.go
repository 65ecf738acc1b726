package session

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// Price is what a model's tokens cost, per million tokens, as the
// configuration's price table says ([plugins.atm-agent-mcp.prices.<model>]).
type Price struct {
	// Input is the price of input tokens that were not read from the
	// cache.
	Input float64
	// CachedInput is the price of input tokens read from the cache (the
	// configuration makes it Input's when it gives none).
	CachedInput float64
	// Output is the price of output tokens (reasoning included).
	Output float64
	// Currency names the money ("USD").
	Currency string
}

// Prices are the prices by model name (exactly as the agent names the
// model). Nothing is guessed: a model that is not in the table has no
// price, and its cost is what the agent reports, or none.
type Prices map[string]Price

// Cost is what u costs at model's price; ok is false when the model has no
// price. Input tokens include the cached ones (backend.Usage), which
// are priced apart.
func (p Prices) Cost(model string, u backend.Usage) (c *backend.Cost, ok bool) {
	pr, ok := p[model]
	if !ok || model == "" {
		return nil, false
	}
	cached := min(u.CachedInputTokens, u.InputTokens)
	amount := (float64(u.InputTokens-cached)*pr.Input + float64(cached)*pr.CachedInput + float64(u.OutputTokens)*pr.Output) / 1e6
	return &backend.Cost{Amount: amount, Currency: pr.Currency}, true
}

// Priced returns u with its cost at model's price when the model has one
// (the price table wins over what the agent says it cost), else u as it
// is: the agent's own cost, or none. A nil u stays nil.
func (p Prices) Priced(model string, u *backend.Usage) *backend.Usage {
	if u == nil {
		return nil
	}
	if c, ok := p.Cost(model, *u); ok {
		r := *u
		r.Cost = c
		return &r
	}
	return u
}

// modelLocked is the model of s: the one its agent said it runs, else the
// one it was started with, else (a Codex session) the configured default;
// s.mu is held.
func (s *Session) modelLocked() string {
	if s.act.model != "" {
		return s.act.model
	}
	if s.params.Model != "" {
		return s.params.Model
	}
	if s.m.cat.TakesDefaults(s.rec.Kind()) {
		return s.m.cfg.Defaults.Model
	}
	return s.rec.Model
}

// usageLocked is s's usage so far, priced (Prices.Priced); nil before any
// report; s.mu is held.
func (s *Session) usageLocked() *backend.Usage {
	return s.m.cfg.Prices.Priced(s.modelLocked(), s.act.usage.total())
}
