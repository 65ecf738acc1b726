package codexchild

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// usages returns the Usage of the ActivityTokens events, in order.
func usages(r *acpRecorder) []Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Usage
	for _, e := range r.events {
		if e.Neutral != nil && e.Neutral.Kind == ActivityTokens && e.Neutral.Usage != nil {
			out = append(out, *e.Neutral.Usage)
		}
	}
	return out
}

// TestACPUsage: an ACP agent's usage_update (context fill, the session's
// cost so far) and each prompt answer's usage (the turn's tokens) become
// the thread's totals in the one Usage of every kind; a second turn adds
// its tokens, and its cost replaces the first (the agent reports the
// session's cost so far).
func TestACPUsage(t *testing.T) {
	e := newACPEnv(t)
	b := e.backend(t, e.config(t))
	p := e.params(t)
	rec := newACPRecorder()
	res := acpTurnOK(t, b, TurnRequest{Prompt: "usage 1500 200000 0.012 USD\ntokens 1200 300 1000\nsay one", Params: p, Handler: rec})
	usd := func(a float64) *Cost { return &Cost{Amount: a, Currency: "USD"} }
	want := []Usage{
		{ContextTokens: 1500, ContextWindow: 200000, Cost: usd(0.012)},
		{InputTokens: 1200, CachedInputTokens: 1000, OutputTokens: 300, TotalTokens: 1500, ContextTokens: 1500, ContextWindow: 200000, Cost: usd(0.012)},
	}
	if d := cmp.Diff(want, usages(rec)); d != "" {
		t.Errorf("turn 1 usage (-want +got):\n%s", d)
	}
	rec2 := newACPRecorder()
	acpTurnOK(t, b, TurnRequest{ThreadID: res.ThreadID, Prompt: "tokens 2000 100\nusage 3600 200000 0.02 USD\nsay two", Params: p, Handler: rec2})
	want2 := []Usage{
		{InputTokens: 1200, CachedInputTokens: 1000, OutputTokens: 300, TotalTokens: 1500, ContextTokens: 3600, ContextWindow: 200000, Cost: usd(0.02)},
		{InputTokens: 3200, CachedInputTokens: 1000, OutputTokens: 400, TotalTokens: 3600, ContextTokens: 3600, ContextWindow: 200000, Cost: usd(0.02)},
	}
	if d := cmp.Diff(want2, usages(rec2)); d != "" {
		t.Errorf("turn 2 usage (-want +got):\n%s", d)
	}
	// A turn whose answer has no usage reports nothing new.
	rec3 := newACPRecorder()
	acpTurnOK(t, b, TurnRequest{ThreadID: res.ThreadID, Prompt: "say three", Params: p, Handler: rec3})
	if got := usages(rec3); len(got) != 0 {
		t.Errorf("turn 3 reported usage %+v, want none", got)
	}
}

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
