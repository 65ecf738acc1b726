package codexchild

import (
	"encoding/json"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Codex reports a thread's token usage as totals itself (app-server
// thread/tokenUsage/updated, mcp-server token_count): these readers put it
// in the seam's one shape (backend.Usage).

// codexAppUsage reads app-server's tokenUsage ({total: {totalTokens,
// inputTokens, cachedInputTokens, outputTokens, reasoningOutputTokens},
// last: {…}, modelContextWindow}).
func codexAppUsage(raw json.RawMessage) (*backend.Usage, bool) {
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
	u := &backend.Usage{InputTokens: p.Total.Input, CachedInputTokens: p.Total.Cached, OutputTokens: p.Total.Output,
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
func codexMCPUsage(info []byte) (*backend.Usage, bool) {
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
	u := &backend.Usage{InputTokens: n(total, "input_tokens"), CachedInputTokens: n(total, "cached_input_tokens"),
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
