package codexchild

import (
	"encoding/json"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Usage is an agent thread's token usage in one shape for every agent
// kind: the thread's totals so far, as the agent reported them. Codex
// reports totals itself (app-server thread/tokenUsage/updated, mcp-server
// token_count); an ACP agent reports each turn's tokens in its prompt
// answer and its cost and context fill in usage_update, which the ACP
// backend adds up per thread (acp_usage.go). Nothing is estimated: a
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

// codexAppUsage reads app-server's tokenUsage ({total: {totalTokens,
// inputTokens, cachedInputTokens, outputTokens, reasoningOutputTokens},
// last: {…}, modelContextWindow}).
func codexAppUsage(raw json.RawMessage) (*Usage, bool) {
	type counts struct {
		Total  int64 `json:"totalTokens"`
		Input  int64 `json:"inputTokens"`
		Cached int64 `json:"cachedInputTokens"`
		Output int64 `json:"outputTokens"`
	}
	var p struct {
		Total  *counts `json:"total"`
		Last   *counts `json:"last"`
		Window int64   `json:"modelContextWindow"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Total == nil {
		return nil, false
	}
	u := &Usage{InputTokens: p.Total.Input, CachedInputTokens: p.Total.Cached, OutputTokens: p.Total.Output,
		TotalTokens: p.Total.Total, ContextWindow: p.Window}
	if p.Last != nil {
		u.ContextTokens = p.Last.Total
	}
	return u, true
}

// codexMCPUsage reads mcp-server's token_count info ({total_token_usage:
// {input_tokens, cached_input_tokens, output_tokens,
// reasoning_output_tokens, total_tokens}, last_token_usage,
// model_context_window}) without decoding the rest of the event.
func codexMCPUsage(info []byte) (*Usage, bool) {
	var buf, tbuf [8]jsonrpcframe.Member
	top, ok := jsonrpcframe.AppendMembers(buf[:0], info)
	if !ok {
		return nil, false
	}
	total, ok := jsonrpcframe.AppendMembers(tbuf[:0], jsonrpcframe.Lookup(top, "total_token_usage"))
	if !ok {
		return nil, false
	}
	n := func(ms []jsonrpcframe.Member, name string) int64 { return count(jsonrpcframe.Lookup(ms, name)) }
	u := &Usage{InputTokens: n(total, "input_tokens"), CachedInputTokens: n(total, "cached_input_tokens"),
		OutputTokens: n(total, "output_tokens"), TotalTokens: n(total, "total_tokens"),
		ContextWindow: n(top, "model_context_window")}
	if last, ok := jsonrpcframe.Members(jsonrpcframe.Lookup(top, "last_token_usage")); ok {
		u.ContextTokens = n(last, "total_tokens")
	}
	return u, true
}

// count reads a JSON token count: a non-negative integer; anything else
// (null, a fraction, a string, a number too large) is 0. It runs for every
// token_count event and allocates nothing.
func count(raw []byte) int64 {
	if len(raw) == 0 || len(raw) > 18 {
		return 0
	}
	var v int64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0
		}
		v = v*10 + int64(c-'0')
	}
	return v
}
