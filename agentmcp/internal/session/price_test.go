package session

import (
	"context"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestPrices: a priced model's cost follows from its tokens (cached input
// at its own price, the rest of the input at the input price) and wins
// over the agent's own; an unpriced model keeps the agent's cost, or has
// none. Nothing is guessed.
func TestPrices(t *testing.T) {
	prices := Prices{"gpt-5.2-codex": {Input: 1.25, CachedInput: 0.125, Output: 10, Currency: "USD"}}
	own := &backend.Cost{Amount: 0.5, Currency: "EUR"}
	u := backend.Usage{InputTokens: 3_000_000, CachedInputTokens: 1_000_000, OutputTokens: 200_000, TotalTokens: 3_200_000}
	withOwn := u
	withOwn.Cost = own
	tests := []struct {
		name  string
		model string
		u     *backend.Usage
		want  *backend.Cost
	}{
		{"priced", "gpt-5.2-codex", &u, &backend.Cost{Amount: 2*1.25 + 1*0.125 + 0.2*10, Currency: "USD"}},
		{"priced wins over the agent's own", "gpt-5.2-codex", &withOwn, &backend.Cost{Amount: 4.625, Currency: "USD"}},
		{"unpriced keeps the agent's own", "claude-sonnet", &withOwn, own},
		{"unpriced, none reported", "claude-sonnet", &u, nil},
		{"no model", "", &u, nil},
	}
	for _, tt := range tests {
		got := prices.Priced(tt.model, tt.u)
		if diff := cmp.Diff(tt.want, got.Cost); diff != "" {
			t.Errorf("%s: cost (-want +got):\n%s", tt.name, diff)
		}
		if got.TotalTokens != tt.u.TotalTokens {
			t.Errorf("%s: tokens changed: %+v", tt.name, got)
		}
	}
	if got := prices.Priced("gpt-5.2-codex", nil); got != nil {
		t.Errorf("Priced(nil) = %+v, want nil", got)
	}
}

// TestSessionPriced: agent_status, agent_sessions and the close show a
// session's cost from the price of the model its agent named (an event's
// Activity.Model), else of the model it was started with.
func TestSessionPriced(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Prices = Prices{"m-1": {Input: 10, CachedInput: 10, Output: 100, Currency: "USD"}, "m-2": {Input: 20, CachedInput: 20, Output: 200, Currency: "USD"}}
	})
	s, err := h.m.Create(context.Background(), CreateRequest{Identity: "arch", Cwd: h.dir, Settings: ThreadSettings{Model: "m-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := turn(s, "TOKENS 1000"); err != nil {
		t.Fatal(err)
	}
	want := &backend.Cost{Amount: (900*10 + 100*100) / 1e6, Currency: "USD"}
	if d := s.Detail(0); cmp.Diff(want, d.TokenUsage.Cost) != "" || d.Model != "m-1" {
		t.Errorf("agent_status cost %+v, model %q; want %+v at m-1's price", d.TokenUsage.Cost, d.Model, want)
	}
	s.recordEvent("session_configured", "thread-1", backend.Activity{Model: "m-2"})
	want = &backend.Cost{Amount: (900*20 + 100*200) / 1e6, Currency: "USD"}
	if v := s.View(); cmp.Diff(want, v.TokenUsage.Cost) != "" || v.Model != "m-2" {
		t.Errorf("agent_sessions cost %+v, model %q; want %+v at the named m-2's price", v.TokenUsage.Cost, v.Model, want)
	}
	if st := s.State(0); st.Model != "m-2" || cmp.Diff(want, st.Usage.Cost) != "" {
		t.Errorf("State model %q, cost %+v", st.Model, st.Usage.Cost)
	}
	if out := h.m.Close(context.Background(), s, false); out.Usage == nil || cmp.Diff(want, out.Usage.Cost) != "" {
		t.Errorf("close usage %+v, want the priced cost", out.Usage)
	}
}
