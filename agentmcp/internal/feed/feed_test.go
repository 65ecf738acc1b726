package feed

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// TestAgentOf: a session's state as the feed publishes it, from one state
// to the next: the view's state and since when, the current item (or
// "thinking"), and the spans of its turns.
func TestAgentOf(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	rec := registry.Session{AgentID: "codex-1", Identity: "arch", Backend: "codex", Cwd: "/w", Branch: "main"}
	usage := &backend.Usage{TotalTokens: 132}
	steps := []struct {
		name string
		st   session.State
		now  time.Time
		want Agent
	}{
		{"idle with auto-mail", session.State{Record: rec, Status: "idle", AutoMail: true}, t0,
			Agent{State: StateWaitingMail, StateSince: t0, Status: "idle"}},
		{"a turn starts: thinking", session.State{Record: rec, Status: "busy", AutoMail: true, TurnStarted: t0.Add(time.Second)}, t0.Add(2 * time.Second),
			Agent{State: StateWorking, StateSince: t0.Add(time.Second), Status: "busy", TurnStarted: ptr(t0.Add(time.Second)),
				Item: &Item{Type: "thinking", Summary: "thinking", Since: t0.Add(time.Second)}, Spans: []Span{{Start: t0.Add(time.Second)}}}},
		{"a command runs", session.State{Record: rec, Status: "busy", AutoMail: true, TurnStarted: t0.Add(time.Second),
			Item: &session.ItemState{Type: "command", Summary: "go test ./...", Status: "running", Since: t0.Add(3 * time.Second)}}, t0.Add(4 * time.Second),
			Agent{State: StateWorking, StateSince: t0.Add(time.Second), Status: "busy", TurnStarted: ptr(t0.Add(time.Second)),
				Item: &Item{Type: "command", Summary: "go test ./...", Since: t0.Add(3 * time.Second)}, Spans: []Span{{Start: t0.Add(time.Second)}}}},
		{"it asks", session.State{Record: rec, Status: "awaiting_approval", AutoMail: true, TurnStarted: t0.Add(time.Second),
			Approvals: []session.ApprovalState{{ApprovalView: session.ApprovalView{ApprovalID: "ap-1", Kind: "exec", Question: "[arch] Allow Codex to run `rm x`?", Command: "rm x"}, Created: t0.Add(5 * time.Second)}}},
			t0.Add(6 * time.Second),
			Agent{State: StateApproval, StateSince: t0.Add(5 * time.Second), Status: "awaiting_approval", TurnStarted: ptr(t0.Add(time.Second)),
				Item: &Item{Type: "thinking", Summary: "thinking", Since: t0.Add(time.Second)}, Spans: []Span{{Start: t0.Add(time.Second)}},
				Approvals: []Approval{{ID: "ap-1", Kind: "exec", Question: "[arch] Allow Codex to run `rm x`?", Command: "rm x", Since: t0.Add(5 * time.Second)}}}},
		{"the turn ends", session.State{Record: rec, Status: "idle", AutoMail: true, Turns: 1, Usage: usage,
			Last: &session.LastResult{Status: "completed", FinishedAt: t0.Add(8 * time.Second).Format(time.RFC3339Nano), Content: ptr("done")}}, t0.Add(9 * time.Second),
			Agent{State: StateWaitingMail, StateSince: t0.Add(9 * time.Second), Status: "idle", Turns: 1, Usage: usage,
				Spans: []Span{{Start: t0.Add(time.Second), End: t0.Add(8 * time.Second), Status: "completed"}},
				Last:  &Result{Status: "completed", Text: "done", At: t0.Add(8 * time.Second)}}},
		{"its next turn fails", session.State{Record: rec, Status: "error", AutoMail: true, Turns: 1, Usage: usage,
			Last: &session.LastResult{Status: "error", FinishedAt: t0.Add(12 * time.Second).Format(time.RFC3339Nano), Error: "codex died"}}, t0.Add(12 * time.Second),
			Agent{State: StateFailed, StateSince: t0.Add(12 * time.Second), Status: "error", Turns: 1, Usage: usage,
				Spans: []Span{{Start: t0.Add(time.Second), End: t0.Add(8 * time.Second), Status: "completed"}},
				Last:  &Result{Status: "error", Error: "codex died", At: t0.Add(12 * time.Second)}}},
		{"closed", session.State{Record: rec, Status: "closed", Turns: 1}, t0.Add(13 * time.Second),
			Agent{State: StateClosed, StateSince: t0.Add(13 * time.Second), Status: "closed", Turns: 1,
				Spans: []Span{{Start: t0.Add(time.Second), End: t0.Add(8 * time.Second), Status: "completed"}}}},
	}
	var prev *published
	for _, s := range steps {
		got := agentOf(s.st, prev, 0, s.now)
		want := s.want
		want.AgentID, want.Identity, want.Kind, want.Cwd, want.Branch = "codex-1", "arch", "codex", "/w", "main"
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s (-want +got):\n%s", s.name, d)
		}
		prev = &published{agent: got}
	}
}

func ptr[T any](v T) *T { return &v }

// TestRecords: a serve's record is written atomically into its instance
// directory and read back by instance; a directory without one, or with
// one that is not a record, is left out.
func TestRecords(t *testing.T) {
	team := t.TempDir()
	rec := Record{Socket: "/tmp/atm-feed-1/feed.sock", Serve: Serve{Instance: "lead", Team: "dev", PID: 42}}
	path, err := writeRecord(filepath.Join(team, "lead"), rec)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("record %v %v, want mode 0600", st, err)
	}
	os.MkdirAll(filepath.Join(team, "empty"), 0o700)
	os.MkdirAll(filepath.Join(team, "bad"), 0o700)
	os.WriteFile(filepath.Join(team, "bad", RecordFile), []byte("{"), 0o600)
	got, err := Records(team)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]Record{"lead": rec}, got); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	removeRecord(path)
	if got, _ := Records(team); len(got) != 0 {
		t.Errorf("after removal: %v", got)
	}
	if got, err := Records(filepath.Join(team, "missing")); err != nil || len(got) != 0 {
		t.Errorf("a missing directory: %v %v", got, err)
	}
}
