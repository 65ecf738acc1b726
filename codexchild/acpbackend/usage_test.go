package acpbackend

import (
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// usages returns the Usage of the ActivityTokens events, in order.
func usages(r *acpRecorder) []backend.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []backend.Usage
	for _, e := range r.events {
		if e.Neutral != nil && e.Neutral.Kind == backend.ActivityTokens && e.Neutral.Usage != nil {
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
	res := acpTurnOK(t, b, backend.TurnRequest{Prompt: "usage 1500 200000 0.012 USD\ntokens 1200 300 1000\nsay one", Params: p, Handler: rec})
	usd := func(a float64) *backend.Cost { return &backend.Cost{Amount: a, Currency: "USD"} }
	want := []backend.Usage{
		{ContextTokens: 1500, ContextWindow: 200000, Cost: usd(0.012)},
		{InputTokens: 1200, CachedInputTokens: 1000, OutputTokens: 300, TotalTokens: 1500, ContextTokens: 1500, ContextWindow: 200000, Cost: usd(0.012)},
	}
	if d := cmp.Diff(want, usages(rec)); d != "" {
		t.Errorf("turn 1 usage (-want +got):\n%s", d)
	}
	rec2 := newACPRecorder()
	acpTurnOK(t, b, backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "tokens 2000 100\nusage 3600 200000 0.02 USD\nsay two", Params: p, Handler: rec2})
	want2 := []backend.Usage{
		{InputTokens: 1200, CachedInputTokens: 1000, OutputTokens: 300, TotalTokens: 1500, ContextTokens: 3600, ContextWindow: 200000, Cost: usd(0.02)},
		{InputTokens: 3200, CachedInputTokens: 1000, OutputTokens: 400, TotalTokens: 3600, ContextTokens: 3600, ContextWindow: 200000, Cost: usd(0.02)},
	}
	if d := cmp.Diff(want2, usages(rec2)); d != "" {
		t.Errorf("turn 2 usage (-want +got):\n%s", d)
	}
	// A turn whose answer has no usage reports nothing new.
	rec3 := newACPRecorder()
	acpTurnOK(t, b, backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "say three", Params: p, Handler: rec3})
	if got := usages(rec3); len(got) != 0 {
		t.Errorf("turn 3 reported usage %+v, want none", got)
	}
}
