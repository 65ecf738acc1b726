package session

import (
	"context"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// TestUsageSeed: a session's usage saved by an earlier serve is counted
// on from: the same thread's totals heard again replace the part it had
// reported (Codex keeps them with a resumed thread), a count that starts
// again (an ACP agent's new process) or a new thread adds to it.
func TestUsageSeed(t *testing.T) {
	saved := &registry.Usage{Tokens: registry.Tokens{InputTokens: 900, OutputTokens: 100, TotalTokens: 1000, Cost: &registry.Cost{Amount: 0.5, Currency: "USD"}},
		Thread: "T2", Last: &registry.Tokens{InputTokens: 540, OutputTokens: 60, TotalTokens: 600, Cost: &registry.Cost{Amount: 0.25, Currency: "USD"}}}
	tests := []struct {
		name   string
		thread string
		report backend.Usage
		want   int64 // total tokens
	}{
		{"nothing heard yet", "", backend.Usage{}, 1000},
		{"the same thread's totals again", "T2", backend.Usage{InputTokens: 630, OutputTokens: 70, TotalTokens: 700}, 1100},
		{"the same thread counting from 0", "T2", backend.Usage{InputTokens: 90, OutputTokens: 10, TotalTokens: 100}, 1100},
		{"a new thread", "T3", backend.Usage{InputTokens: 90, OutputTokens: 10, TotalTokens: 100}, 1100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u usageTotals
			u.seed(saved)
			if tt.thread != "" {
				u.report(tt.thread, tt.report)
			}
			if got := u.total(); got == nil || got.TotalTokens != tt.want {
				t.Errorf("total = %+v, want %d tokens", got, tt.want)
			}
			back := u.saved()
			if back == nil || back.TotalTokens != tt.want {
				t.Errorf("saved = %+v, want %d tokens", back, tt.want)
			}
		})
	}
	var u usageTotals
	u.seed(saved)
	if diff := cmp.Diff(saved, u.saved()); diff != "" {
		t.Errorf("saved after seed (-want +got):\n%s", diff)
	}
}

// TestUsageOverResume: a session's usage, model and raised budget are in
// its record, and a later serve that resumes it counts on from them.
func TestUsageOverResume(t *testing.T) {
	checkNoLeaks(t)
	home := t.TempDir()
	fb := fakebackend.New(fakebackend.Config{})
	serve := func() (*Manager, func()) {
		reg, err := registry.Open(registry.Config{Home: home, Team: "dev", Identity: "proxy"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager(Config{Home: home, Team: "dev", Backends: map[string]Backend{registry.DefaultKind: fb}, Registry: RegistryOf(reg), Cwd: home, PersistThreads: true,
			SummaryTimeout: time.Second, Prices: Prices{"mock-model": {Input: 2, CachedInput: 2, Output: 10, Currency: "USD"}}})
		if err != nil {
			t.Fatal(err)
		}
		return m, func() {
			m.Shutdown()
			m.Stop()
			m.Wait(5 * time.Second)
			reg.Close()
		}
	}
	m, stop := serve()
	s, err := m.Create(context.Background(), CreateRequest{Identity: "arch", Cwd: home, Settings: ThreadSettings{Model: "mock-model"}})
	if err != nil {
		t.Fatal(err)
	}
	id := s.Record().AgentID
	if err := turn(s, "TOKENS 1000"); err != nil {
		t.Fatal(err)
	}
	s.SetBudget(50000)
	stop()

	m, stop = serve()
	defer stop()
	s = m.Get(id)
	if s == nil {
		t.Fatal("the second serve has no record of the session")
	}
	if err := m.Rebind(s, SourceClaude); err != nil {
		t.Fatal(err)
	}
	want := &backend.Usage{InputTokens: 900, OutputTokens: 100, TotalTokens: 1000, Cost: &backend.Cost{Amount: 0.0028, Currency: "USD"}}
	if diff := cmp.Diff(want, s.Usage()); diff != "" {
		t.Errorf("usage after the resume (-want +got):\n%s", diff)
	}
	if err := turn(s, "TOKENS 500"); err != nil { // the same thread: its totals go on (1500)
		t.Fatal(err)
	}
	if got := s.Usage(); got == nil || got.TotalTokens != 1500 {
		t.Errorf("usage after a turn = %+v, want 1500 tokens, not the thread's counted twice", got)
	}
	if b := s.Budget(); b == nil || b.Tokens != 50000 || !b.Raised {
		t.Errorf("budget after the resume = %+v, want the raised 50000", b)
	}
}

// TestTeamUsage: the team's usage adds this serve's sessions, closed ones
// included, and the sessions of the team's other serves as their records
// say, each priced by its model; a session of another team is left out.
func TestTeamUsage(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Registry = c.Registry.(*countingRegistry).Registry
		c.Prices = Prices{"mock-small": {Input: 1, CachedInput: 0.5, Output: 4, Currency: "USD"}}
	})
	a, b := h.create("arch"), h.create("dev-1")
	if err := turn(a, "TOKENS 1000"); err != nil {
		t.Fatal(err)
	}
	if err := turn(b, "TOKENS 200"); err != nil {
		t.Fatal(err)
	}
	h.m.Close(context.Background(), a, false)
	other, err := registry.Open(registry.Config{Home: h.dir, Team: "dev", Identity: "lead-2"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, rec := range []registry.Session{
		{Identity: "mock-2", Backend: "mock", Team: "dev", Model: "mock-small", Status: registry.StatusIdle, ThreadState: registry.ThreadIdle,
			Usage: &registry.Usage{Tokens: registry.Tokens{InputTokens: 2000, CachedInputTokens: 1000, OutputTokens: 500, TotalTokens: 2500}}},
		{Identity: "elsewhere", Backend: "mock", Team: "other-team", Status: registry.StatusClosed, ThreadState: registry.ThreadClosed,
			Usage: &registry.Usage{Tokens: registry.Tokens{TotalTokens: 99999}}},
	} {
		if _, err := other.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	got := h.m.TeamBudgets().Usage()
	want := backend.Usage{InputTokens: 900 + 180 + 2000, CachedInputTokens: 1000, OutputTokens: 100 + 20 + 500, TotalTokens: 3700,
		Cost: &backend.Cost{Amount: (1000*1 + 1000*0.5 + 500*4) / 1e6, Currency: "USD"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TeamUsage (-want +got):\n%s", diff)
	}
}
