package view

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestWriteTable: status's table: the summary line with the team's
// tokens and cost (its closed sessions that no feed shows included) and
// budget, one line per agent with what it does and for how long, its
// budget, branch and change, its sub-agents under it.
func TestWriteTable(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	s := Snapshot{Team: "dev", Serves: []ServeState{{Serve: feed.Serve{Instance: "lead"}, Live: true}, {Serve: feed.Serve{Instance: "old"}}},
		Agents: []feed.Agent{
			{Identity: "arch", Kind: "codex", Model: "gpt-5", State: feed.StateWorking, StateSince: now.Add(-time.Minute),
				Item: &feed.Item{Type: "command", Summary: "go test ./...", Since: now.Add(-12 * time.Second)}, Turns: 3,
				Usage: &backend.Usage{TotalTokens: 396}, Serve: "lead", Budget: &session.BudgetState{Tokens: 800, Used: 396, Percent: 49},
				Worktree:  &feed.Worktree{Path: "/r/.atm/worktrees/arch", Branch: "atm/arch", Stat: &feed.DiffStat{Files: 2, Added: 5, Removed: 1}},
				SubAgents: []backend.SubAgent{{ThreadID: "019a-child-thread-id", Status: "running"}}},
			{Identity: "rev", Kind: "claude", State: feed.StateApproval, StateSince: now.Add(-4 * time.Second),
				Approvals: []feed.Approval{{ID: "1", Question: "[rev] Allow claude to run `make deploy`?"}}, Turns: 2, UnreadMail: 1,
				Usage: &backend.Usage{TotalTokens: 12500, Cost: &backend.Cost{Amount: 0.012, Currency: "USD"}}, Serve: "lead", Branch: "main",
				Budget: &session.BudgetState{Tokens: 12000, Used: 12500, Percent: 104, Exceeded: true}},
			{Identity: "qa", Kind: "mock", State: feed.StateGone, StateSince: now, Turns: 1, Serve: "old",
				Worktree: &feed.Worktree{Branch: "atm/qa", Released: "kept", StatText: "1 files changed, 2 insertions(+), 0 deletions(-)"}},
		},
		// Two closed sessions no feed shows, and the team's budget.
		Totals: Totals{Recorded: &backend.Usage{TotalTokens: 1104, Cost: &backend.Cost{Amount: 0.002, Currency: "USD"}}, RecordedSessions: 2, Budget: 20000}}
	var b bytes.Buffer
	if err := WriteTable(&b, s, now); err != nil {
		t.Fatal(err)
	}
	want := `team dev: 3 agents: 1 waiting for approval, 1 working, 1 gone (serve exited), 1 serve running; 14000 tokens, $0.0140; budget 70 % of 20000 tokens
AGENT              KIND       MODEL  STATE                 FOR  DOING NOW                                       TURNS  TOKENS  COST     BUDGET  MAIL  APPROVALS  BRANCH    CHANGES              SERVE
arch               codex      gpt-5  working               12s  command: go test ./...                          3      396     -        49%     0     0          atm/arch  2 files +5 -1        lead
  └ 019a-child-t…  sub-agent  -      running               -    -
rev                claude     -      waiting for approval  4s   asks: [rev] Allow claude to run ` + "`make deploy`" + `?  2      12.5k   $0.0120  104%!   1     1          main      -                    lead
qa                 mock       -      gone (serve exited)   -    -                                               1      -       -        -       0     0          atm/qa    1 file +2 -0 (kept)  old
`
	if *update {
		t.Logf("got:\n%s", b.String())
	}
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
}

var update = flag.Bool("update", false, "log the table to copy into the test")

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 45 * time.Second: "45s", 185 * time.Second: "3m05s", 2*time.Hour + 10*time.Minute: "2h10m", -time.Second: "0s"} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}
