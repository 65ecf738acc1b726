package view

import (
	"context"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// TestTotals: the team's totals add the sessions no feed shows (a closed
// one of a serve that is gone, priced by its model), never one a feed
// shows, nor another team's; the team's budget set at run time wins over
// the configured one.
func TestTotals(t *testing.T) {
	home := t.TempDir()
	dir, err := registry.TeamDir(home, "dev")
	if err != nil {
		t.Fatal(err)
	}
	startStandIn(t, dir.Path(), "lead-a", feed.Agent{AgentID: "codex-live", Identity: "arch", Kind: "codex", State: feed.StateWorking,
		Usage: &backend.Usage{TotalTokens: 500}})
	reg, err := registry.Open(registry.Config{Home: home, Team: "dev", Identity: "lead-gone"})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []registry.Session{
		{AgentID: "codex-live", Identity: "arch", Team: "dev", Status: registry.StatusClosed, ThreadState: registry.ThreadClosed,
			Usage: &registry.Usage{Tokens: registry.Tokens{TotalTokens: 400}}}, // shown by a feed, newer there
		{AgentID: "codex-closed", Identity: "old", Team: "dev", Model: "m", Status: registry.StatusClosed, ThreadState: registry.ThreadClosed,
			Usage: &registry.Usage{Tokens: registry.Tokens{InputTokens: 1000, OutputTokens: 100, TotalTokens: 1100}}},
		{AgentID: "codex-other", Identity: "x", Team: "other", Status: registry.StatusClosed, ThreadState: registry.ThreadClosed,
			Usage: &registry.Usage{Tokens: registry.Tokens{TotalTokens: 9999}}},
	} {
		if _, err := reg.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	reg.Close()

	tm := NewTeam(TeamConfig{Dirs: []string{dir.Path()}, Team: "dev", Rescan: 20 * time.Millisecond, Registries: []registry.Dir{dir},
		Prices: session.Prices{"m": {Input: 1, CachedInput: 1, Output: 10, Currency: "USD"}}, Budget: 1000})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tm.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-tm.Ready()
	tm.Refresh()
	s := tm.Snapshot()
	want := Totals{Recorded: &backend.Usage{InputTokens: 1000, OutputTokens: 100, TotalTokens: 1100, Cost: &backend.Cost{Amount: 0.002, Currency: "USD"}},
		RecordedSessions: 1, Budget: 1000}
	if diff := cmp.Diff(want, s.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if got := s.Spent().TotalTokens; got != 1600 {
		t.Errorf("Spent = %d tokens, want 1600 (500 live + 1100 recorded)", got)
	}
	if b := budgetOf(s); b == nil || b.Used != 1600 || !b.Exceeded {
		t.Errorf("budget %+v, want 1600 of 1000, exceeded", b)
	}
	if err := dir.WriteTeamBudget(registry.TeamBudget{Tokens: 5000, By: "lead-a"}); err != nil {
		t.Fatal(err)
	}
	s = waitSnapshot(t, tm, "the raised budget", func(s Snapshot) bool { return s.Totals.Budget == 5000 && s.Totals.Raised })
	if b := budgetOf(s); b.Percent != 32 || b.Exceeded {
		t.Errorf("budget %+v, want 32 %% of 5000", b)
	}
}
