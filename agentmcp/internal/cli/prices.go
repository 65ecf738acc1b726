package cli

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// Prices maps the configured price table onto the sessions' (serve's,
// and the view's and status's for the sessions they find only in the
// registry).
func Prices(cfg *config.Config) session.Prices {
	if len(cfg.Prices) == 0 {
		return nil
	}
	p := make(session.Prices, len(cfg.Prices))
	for model, v := range cfg.Prices {
		p[model] = session.Price{Input: v.Input, CachedInput: v.CachedInput, Output: v.Output, Currency: v.Currency}
	}
	return p
}
