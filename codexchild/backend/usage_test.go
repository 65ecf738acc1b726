package backend

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUsageAdd: the sum of two usages (a session's threads).
func TestUsageAdd(t *testing.T) {
	eur := func(a float64) *Cost { return &Cost{Amount: a, Currency: "EUR"} }
	usd := func(a float64) *Cost { return &Cost{Amount: a, Currency: "USD"} }
	tests := []struct {
		name string
		a, b Usage
		want Usage
	}{
		{"tokens", Usage{InputTokens: 1, CachedInputTokens: 2, OutputTokens: 3, TotalTokens: 4}, Usage{InputTokens: 10, CachedInputTokens: 20, OutputTokens: 30, TotalTokens: 40},
			Usage{InputTokens: 11, CachedInputTokens: 22, OutputTokens: 33, TotalTokens: 44}},
		{"cost in one currency", Usage{Cost: usd(1)}, Usage{Cost: usd(0.5)}, Usage{Cost: usd(1.5)}},
		{"cost only in the first", Usage{Cost: usd(1)}, Usage{}, Usage{Cost: usd(1)}},
		{"cost only in the second", Usage{}, Usage{Cost: eur(2)}, Usage{Cost: eur(2)}},
		{"costs in two currencies keep the first", Usage{Cost: usd(1)}, Usage{Cost: eur(2)}, Usage{Cost: usd(1)}},
		{"context of the second", Usage{ContextTokens: 5, ContextWindow: 10}, Usage{ContextTokens: 7, ContextWindow: 20}, Usage{ContextTokens: 7, ContextWindow: 20}},
		{"context kept", Usage{ContextTokens: 5, ContextWindow: 10}, Usage{TotalTokens: 1}, Usage{TotalTokens: 1, ContextTokens: 5, ContextWindow: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, tt.a.Add(tt.b)); d != "" {
				t.Errorf("Add (-want +got):\n%s", d)
			}
		})
	}
}
