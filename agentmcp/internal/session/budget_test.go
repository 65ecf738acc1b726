package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// notices collects the budget notices of a Manager.
type notices chan BudgetNotice

func (n notices) next(t *testing.T) BudgetNotice {
	t.Helper()
	select {
	case got := <-n:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("no budget notice within 10 s")
	}
	return BudgetNotice{}
}

func (n notices) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-n:
		t.Fatalf("an unexpected budget notice: %+v", got)
	case <-time.After(100 * time.Millisecond):
	}
}

// turn runs one turn of prompt and returns its error.
func turn(s *Session, prompt string) error {
	_, err := s.Run(context.Background(), Turn{Prompt: prompt, Source: SourceClaude})
	return err
}

// TestSessionBudget: a session's budget (its role's) is told to the lead
// once at 80 % and once when used up; then no turn starts (a clear error
// with its code and numbers, and auto-mail is refused: the mail waits),
// until the budget is raised, which is kept in its record; a raised budget
// is told at its own 80 % once more.
func TestSessionBudget(t *testing.T) {
	told := make(notices, 10)
	h := newHarness(t, func(c *Config) {
		c.Budgets = Budgets{Session: 5000, Roles: map[string]int64{"small": 1000}}
		c.BudgetNotice = func(n BudgetNotice) { told <- n }
	})
	s, err := h.m.Create(context.Background(), CreateRequest{Identity: "arch", Cwd: h.dir, Role: "small"})
	if err != nil {
		t.Fatal(err)
	}
	id := s.Record().AgentID
	if err := turn(s, "TOKENS 500"); err != nil {
		t.Fatal(err)
	}
	told.none(t)
	if err := turn(s, "TOKENS 300"); err != nil {
		t.Fatal(err)
	}
	want := BudgetNotice{AgentID: id, Identity: "arch", BudgetState: BudgetState{Tokens: 1000, Used: 800, Percent: 80}}
	if diff := cmp.Diff(want, told.next(t)); diff != "" {
		t.Errorf("the 80 %% notice (-want +got):\n%s", diff)
	}
	if err := turn(s, "TOKENS 100"); err != nil {
		t.Fatal(err)
	}
	told.none(t) // once
	if err := turn(s, "TOKENS 150"); err != nil {
		t.Fatal(err) // a turn that started within the budget ends as it would
	}
	want.BudgetState = BudgetState{Tokens: 1000, Used: 1050, Percent: 105, Exceeded: true}
	if diff := cmp.Diff(want, told.next(t)); diff != "" {
		t.Errorf("the 100 %% notice (-want +got):\n%s", diff)
	}

	before := len(h.fb.Requests())
	err = turn(s, "hello")
	var pe *proxyerr.Error
	if !errors.Is(err, proxyerr.ErrBudgetExceeded) || !errors.As(err, &pe) {
		t.Fatalf("a turn over the budget = %v, want BUDGET_EXCEEDED", err)
	}
	wantErr := "arch has used 1050 of its 1000-token budget: no new turn starts for it and its mail waits unread; " +
		"raise the budget with budget_tokens on codex-reply or agent_reply (above 1050)"
	if pe.Error() != wantErr || pe.Kind.Code() != -32010 || pe.Data["scope"] != "session" || pe.Data["used_tokens"] != int64(1050) {
		t.Errorf("error %q (code %d, data %v), want %q, -32010, scope session, used_tokens 1050", pe.Error(), pe.Kind.Code(), pe.Data, wantErr)
	}
	if s.TryMail("mail for arch", func(bool) {}) {
		t.Error("an auto-mail turn started over the budget")
	}
	if _, err := s.RunBackground(Turn{Prompt: "later", Source: SourceClaude}); !errors.Is(err, proxyerr.ErrBudgetExceeded) {
		t.Errorf("a background turn over the budget = %v, want BUDGET_EXCEEDED", err)
	}
	if n := len(h.fb.Requests()) - before; n != 0 {
		t.Errorf("%d turns reached the agent over the budget", n)
	}
	if d := s.Detail(0); d.Budget == nil || !d.Budget.Exceeded || d.Budget.Tokens != 1000 {
		t.Errorf("agent_status budget = %+v, want 1000, exceeded", d.Budget)
	}

	st := s.SetBudget(2000)
	if diff := cmp.Diff(&BudgetState{Tokens: 2000, Used: 1050, Percent: 52, Raised: true}, st); diff != "" {
		t.Errorf("SetBudget (-want +got):\n%s", diff)
	}
	if rec := h.reg.List(registry.Filter{Identity: "arch"}); len(rec) != 1 || rec[0].BudgetTokens != 2000 {
		t.Errorf("the record's budget = %+v, want 2000", rec)
	}
	if err := turn(s, "TOKENS 600"); err != nil {
		t.Fatalf("a turn after the raise: %v", err)
	}
	want.BudgetState = BudgetState{Tokens: 2000, Used: 1650, Percent: 82, Raised: true}
	if diff := cmp.Diff(want, told.next(t)); diff != "" {
		t.Errorf("the raised budget's 80 %% notice (-want +got):\n%s", diff)
	}
}

// TestBudgetInterrupt: with Interrupt, the running turn that reaches its
// budget is interrupted, and the notice names it.
func TestBudgetInterrupt(t *testing.T) {
	told := make(notices, 10)
	h := newHarness(t, func(c *Config) {
		c.Budgets = Budgets{Session: 1000, Interrupt: true}
		c.BudgetNotice = func(n BudgetNotice) { told <- n }
	})
	s := h.create("arch")
	res, err := s.Run(context.Background(), Turn{Prompt: "TOKENS_BLOCK 1200", Source: SourceClaude})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "interrupted" {
		t.Errorf("the turn over the budget ended %q, want interrupted", res.Status)
	}
	n := told.next(t)
	if !n.Exceeded || cmp.Diff([]string{"arch"}, n.Interrupted) != "" {
		t.Errorf("notice %+v, want exceeded, arch interrupted", n)
	}
}

// TestTeamBudget: the team's budget counts every session, a closed one
// too; used up, it holds back every session's turns (scope team) until it
// is raised, for every serve of the team (the team's registry directory).
func TestTeamBudget(t *testing.T) {
	told := make(notices, 10)
	h := newHarness(t, func(c *Config) {
		c.Budgets = Budgets{Team: 1000}
		c.BudgetNotice = func(n BudgetNotice) { told <- n }
		c.Registry = c.Registry.(*countingRegistry).Registry // the registry itself, with its team directory
	})
	a, b := h.create("arch"), h.create("dev-1")
	if err := turn(a, "TOKENS 700"); err != nil {
		t.Fatal(err)
	}
	h.m.Close(context.Background(), a, false)
	if err := turn(b, "TOKENS 150"); err != nil {
		t.Fatal(err)
	}
	if n := told.next(t); !n.Team || n.Used != 850 || n.Exceeded {
		t.Errorf("notice %+v, want the team's 80 %%: 850 used", n)
	}
	if err := turn(b, "TOKENS 200"); err != nil {
		t.Fatal(err)
	}
	if n := told.next(t); !n.Team || n.Used != 1050 || !n.Exceeded {
		t.Errorf("notice %+v, want the team's budget used up: 1050", n)
	}
	err := turn(b, "hello")
	var pe *proxyerr.Error
	if !errors.As(err, &pe) || !errors.Is(err, proxyerr.ErrBudgetExceeded) || pe.Data["scope"] != "team" {
		t.Fatalf("a turn over the team's budget = %v, want BUDGET_EXCEEDED of scope team", err)
	}
	st, err := h.m.TeamBudgets().Set(5000)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&BudgetState{Tokens: 5000, Used: 1050, Percent: 21, Raised: true}, st); diff != "" {
		t.Errorf("SetTeamBudget (-want +got):\n%s", diff)
	}
	if err := turn(b, "hello"); err != nil {
		t.Errorf("a turn after the team's raise: %v", err)
	}
	if got, ok, err := h.reg.Registry.(registryAdapter).Dir().ReadTeamBudget(); err != nil || !ok || got.Tokens != 5000 {
		t.Errorf("the team's budget in the registry = %+v, %v, %v; want 5000", got, ok, err)
	}
}

// TestBudgetWatched: a usage report wakes the budget watcher only when a
// budget can be crossed — the session's own (set at run time or its
// role's), or the team's (configured, or set at run time, seen for every
// session) — and not when there is none anywhere, where the wake-up
// would only cost the turn.
func TestBudgetWatched(t *testing.T) {
	tests := []struct {
		name    string
		budgets Budgets
		role    string
		set     func(h *harness, s *Session)
		want    bool
	}{
		{"no budget anywhere", Budgets{}, "", nil, false},
		{"a session budget configured", Budgets{Session: 500}, "", nil, true},
		{"its role's", Budgets{Roles: map[string]int64{"small": 500}}, "small", nil, true},
		{"another role's", Budgets{Roles: map[string]int64{"small": 500}}, "", nil, false},
		{"set on the session at run time", Budgets{}, "", func(_ *harness, s *Session) { s.SetBudget(700) }, true},
		{"the team's configured", Budgets{Team: 1000}, "", nil, true},
		{"the team's set at run time", Budgets{}, "", func(h *harness, _ *Session) {
			if _, err := h.m.TeamBudgets().Set(900); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Budgets = tt.budgets
				c.Registry = c.Registry.(*countingRegistry).Registry // with its team directory, for the team's budget
			})
			s, err := h.m.Create(context.Background(), CreateRequest{Identity: "arch", Cwd: h.dir, Role: tt.role})
			if err != nil {
				t.Fatal(err)
			}
			if tt.set != nil {
				tt.set(h, s)
			}
			if got := s.budgetWatched(); got != tt.want {
				t.Errorf("budgetWatched() = %v, want %v", got, tt.want)
			}
		})
	}
}
