package codexchild

import "testing"

// TestCount: a token count as Codex writes it, and what is not one.
func TestCount(t *testing.T) {
	for raw, want := range map[string]int64{"0": 0, "264": 264, "258400": 258400, "": 0, "null": 0, "-3": 0, "1.5": 0, `"12"`: 0,
		"123456789012345678": 123456789012345678, "1234567890123456789": 0} {
		if got := count([]byte(raw)); got != want {
			t.Errorf("count(%q) = %d, want %d", raw, got, want)
		}
	}
}

// FuzzCodexUsage: the readers of Codex's token usage take anything
// without panicking; a usage they say they read is there, and mcp-server's
// counts are never negative.
func FuzzCodexUsage(f *testing.F) {
	f.Add([]byte(`{"total_token_usage": {"input_tokens": 240, "cached_input_tokens": 100, "output_tokens": 24, "total_tokens": 264}, "last_token_usage": {"total_tokens": 132}, "model_context_window": 258400}`))
	f.Add([]byte(`{"total": {"totalTokens": 264, "inputTokens": 240}, "last": {"totalTokens": 132}, "modelContextWindow": 258400}`))
	f.Add([]byte(`{"total_token_usage": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if u, ok := codexMCPUsage(b); ok && (u == nil || u.InputTokens < 0 || u.OutputTokens < 0 || u.TotalTokens < 0 || u.CachedInputTokens < 0) {
			t.Fatalf("mcp-server usage of %s: %+v", b, u)
		}
		if u, ok := codexAppUsage(b); ok && u == nil {
			t.Fatalf("app-server usage of %s: ok without a usage", b)
		}
	})
}
