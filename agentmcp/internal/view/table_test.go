package view

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestWriteTable: status's table: the summary line with the team's
// tokens and cost, one line per agent with what it does and for how long,
// its sub-agents under it.
func TestWriteTable(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	s := Snapshot{Team: "dev", Serves: []ServeState{{Serve: feed.Serve{Instance: "lead"}, Live: true}, {Serve: feed.Serve{Instance: "old"}}},
		Agents: []feed.Agent{
			{Identity: "arch", Kind: "codex", Model: "gpt-5", State: feed.StateWorking, StateSince: now.Add(-time.Minute),
				Item: &feed.Item{Type: "command", Summary: "go test ./...", Since: now.Add(-12 * time.Second)}, Turns: 3,
				Usage: &backend.Usage{TotalTokens: 396}, Serve: "lead",
				SubAgents: []backend.SubAgent{{ThreadID: "019a-child-thread-id", Status: "running"}}},
			{Identity: "rev", Kind: "claude", State: feed.StateApproval, StateSince: now.Add(-4 * time.Second),
				Approvals: []feed.Approval{{ID: "1", Question: "[rev] Allow claude to run `make deploy`?"}}, Turns: 2, UnreadMail: 1,
				Usage: &backend.Usage{TotalTokens: 12500, Cost: &backend.Cost{Amount: 0.012, Currency: "USD"}}, Serve: "lead"},
			{Identity: "qa", Kind: "mock", State: feed.StateGone, StateSince: now, Turns: 1, Serve: "old"},
		}}
	var b bytes.Buffer
	if err := WriteTable(&b, s, now); err != nil {
		t.Fatal(err)
	}
	want := `team dev: 3 agents: 1 waiting for approval, 1 working, 1 gone (serve exited), 1 serve running; 12896 tokens, $0.0120
AGENT              KIND       MODEL  STATE                 FOR  DOING NOW                                       TURNS  TOKENS  COST     MAIL  APPROVALS  SERVE
arch               codex      gpt-5  working               12s  command: go test ./...                          3      396     -        0     0          lead
  └ 019a-child-t…  sub-agent  -      running               -    -
rev                claude     -      waiting for approval  4s   asks: [rev] Allow claude to run ` + "`make deploy`" + `?  2      12.5k   $0.0120  1     1          lead
qa                 mock       -      gone (serve exited)   -    -                                               1      -       -        0     0          old
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
