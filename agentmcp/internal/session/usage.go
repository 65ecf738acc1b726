package session

import (
	"strconv"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// UsageLine is a token usage for a human: "1500 tokens (input 1200,
// cached 1000, output 300), cost 0.0120 USD". The cost is left out when the
// agent reported none.
func UsageLine(u backend.Usage) string {
	s := strconv.FormatInt(u.TotalTokens, 10) + " tokens (input " + strconv.FormatInt(u.InputTokens, 10) +
		", cached " + strconv.FormatInt(u.CachedInputTokens, 10) + ", output " + strconv.FormatInt(u.OutputTokens, 10) + ")"
	if u.Cost != nil {
		s += ", cost " + strconv.FormatFloat(u.Cost.Amount, 'f', 4, 64) + " " + u.Cost.Currency
	}
	return s
}
