package backend

// Usage is an agent thread's token usage in one shape for every agent
// kind: the thread's totals so far, as the agent reported them. Codex
// reports totals itself (app-server thread/tokenUsage/updated, mcp-server
// token_count); an ACP agent reports each turn's tokens in its prompt
// answer and its cost and context fill in usage_update, which the ACP
// backend adds up per thread (package acpbackend). Nothing is estimated: a
// number the agent did not report is 0, a cost it did not report is nil.
type Usage struct {
	// InputTokens are the prompt tokens, cached ones included.
	InputTokens int64 `json:"input_tokens"`
	// CachedInputTokens are the input tokens read from the provider's
	// cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// OutputTokens are the tokens the model wrote (reasoning included).
	OutputTokens int64 `json:"output_tokens"`
	// TotalTokens is the agent's own total (for Codex, input plus output).
	TotalTokens int64 `json:"total_tokens"`
	// Cost is what the agent says the thread has cost so far; nil when it
	// says nothing (Codex never does).
	Cost *Cost `json:"cost,omitempty"`
	// ContextTokens and ContextWindow are how full the model's context is
	// and its size, when the agent says (0 when not).
	ContextTokens int64 `json:"context_tokens,omitempty"`
	ContextWindow int64 `json:"context_window,omitempty"`
}

// Cost is an amount of money in a currency ("USD").
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// Add returns u plus v: the token counts summed, the cost summed when both
// are in one currency (else v's when u has none, u's otherwise), the
// context of v when it says one.
func (u Usage) Add(v Usage) Usage {
	r := Usage{InputTokens: u.InputTokens + v.InputTokens, CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		OutputTokens: u.OutputTokens + v.OutputTokens, TotalTokens: u.TotalTokens + v.TotalTokens,
		ContextTokens: u.ContextTokens, ContextWindow: u.ContextWindow}
	if v.ContextWindow > 0 || v.ContextTokens > 0 {
		r.ContextTokens, r.ContextWindow = v.ContextTokens, v.ContextWindow
	}
	switch {
	case u.Cost != nil && v.Cost != nil && u.Cost.Currency == v.Cost.Currency:
		r.Cost = &Cost{Amount: u.Cost.Amount + v.Cost.Amount, Currency: u.Cost.Currency}
	case u.Cost != nil:
		c := *u.Cost
		r.Cost = &c
	case v.Cost != nil:
		c := *v.Cost
		r.Cost = &c
	}
	return r
}

// IsZero reports whether u says nothing.
func (u Usage) IsZero() bool { return u == Usage{} }
