package registry

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAdopt: a later instance takes over the sessions an ended one left
// (live ones become stale), keeps its own, skips agent_ids it has, and the
// ended instance's registry file is gone; a live instance is not touched.
func TestAdopt(t *testing.T) {
	testHome(t)
	clock := newFakeClock()
	old := openTest(t, "session-aaaaaaaa", clock)
	closed := mustAdd(t, old, Session{Identity: "codex1", Status: StatusClosed, BackendID: "thread-1"})
	live := mustAdd(t, old, Session{Identity: "codex2"})
	if err := old.Dir().WriteSummary("codex1", "thread-1", "yesterday's work"); err != nil {
		t.Fatal(err)
	}

	cur := openTest(t, "session-bbbbbbbb", clock)
	own := mustAdd(t, cur, Session{Identity: "codex3", Status: StatusClosed})
	if _, err := cur.Adopt("session-aaaaaaaa"); !errors.As(err, new(*ConflictError)) {
		t.Fatalf("Adopt of a live instance: %v, want a ConflictError", err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := cur.Adopt("session-aaaaaaaa")
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	if diff := cmp.Diff([]string{closed.AgentID, live.AgentID}, agentIDs(got)); diff != "" {
		t.Errorf("adopted (-want +got):\n%s", diff)
	}
	want := map[string]Status{own.AgentID: StatusClosed, closed.AgentID: StatusClosed, live.AgentID: StatusStale}
	if diff := cmp.Diff(want, statuses(cur)); diff != "" {
		t.Errorf("statuses after Adopt (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(old.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the ended instance's registry is still there: %v", err)
	}
	if text, err := cur.Dir().ReadSummary("codex1", "thread-1"); err != nil || text != "yesterday's work" {
		t.Errorf("summary after Adopt: %q, %v", text, err)
	}
	again, err := cur.Adopt("session-aaaaaaaa")
	if err != nil || len(again) != 0 {
		t.Errorf("second Adopt: %v, %v; want nothing", agentIDs(again), err)
	}
	if _, err := cur.Adopt("session-bbbbbbbb"); err == nil {
		t.Error("Adopt of its own instance: no error")
	}
	// The move is persisted: a reopened registry has the sessions.
	if err := cur.Close(); err != nil {
		t.Fatal(err)
	}
	re := openTest(t, "session-bbbbbbbb", clock)
	if diff := cmp.Diff(want, statuses(re)); diff != "" {
		t.Errorf("statuses after reopening (-want +got):\n%s", diff)
	}
}

// TestAdoptHandedTo: only the sessions handed over to the named Claude
// Code session move, whatever the instance; the others stay in the ended
// instance's file, which is kept.
func TestAdoptHandedTo(t *testing.T) {
	testHome(t)
	clock := newFakeClock()
	old := openTest(t, "team-lead", clock)
	mine := mustAdd(t, old, Session{Identity: "codex1", BackendID: "thread-1", Turns: 3})
	other := mustAdd(t, old, Session{Identity: "codex2", BackendID: "thread-2"})
	closed := mustAdd(t, old, Session{Identity: "codex3", Status: StatusClosed})
	for id, to := range map[string]string{mine.AgentID: "141a23ea", other.AgentID: "99999999"} {
		if _, err := old.Update(id, func(s *Session) { s.Status, s.ThreadState, s.HandedTo = StatusStale, ThreadClosed, to }); err != nil {
			t.Fatal(err)
		}
	}
	cur := openTest(t, "team-lead-2", clock)
	if _, err := cur.AdoptHandedTo("team-lead", "141a23ea"); !errors.As(err, new(*ConflictError)) {
		t.Fatalf("AdoptHandedTo of a live instance: %v, want a ConflictError", err)
	}
	if _, err := cur.AdoptHandedTo("team-lead", ""); err == nil {
		t.Error("AdoptHandedTo without a Claude Code session: no error")
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := cur.AdoptHandedTo("team-lead", "141a23ea")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].AgentID != mine.AgentID || got[0].HandedTo != "141a23ea" || got[0].Turns != 3 || got[0].Status != StatusStale {
		t.Errorf("adopted %+v; want %s, stale, handed to 141a23ea, 3 turns", got, mine.AgentID)
	}
	again, err := cur.AdoptHandedTo("team-lead", "141a23ea")
	if err != nil || len(again) != 0 {
		t.Errorf("second AdoptHandedTo: %v, %v; want nothing", agentIDs(again), err)
	}
	left := openTest(t, "team-lead", clock)
	want := map[string]Status{other.AgentID: StatusStale, closed.AgentID: StatusClosed}
	if diff := cmp.Diff(want, statuses(left)); diff != "" {
		t.Errorf("left in the ended instance (-want +got):\n%s", diff)
	}
}

// TestAdoptIf: the sessions take selects move; the rest stay.
func TestAdoptIf(t *testing.T) {
	testHome(t)
	old := openTest(t, "session-aaaaaaaa", nil)
	a := mustAdd(t, old, Session{Identity: "codex1", Status: StatusClosed, Tag: "move"})
	b := mustAdd(t, old, Session{Identity: "codex2", Status: StatusClosed})
	old.Close()
	cur := openTest(t, "session-bbbbbbbb", nil)
	got, err := cur.AdoptIf("session-aaaaaaaa", func(s Session) bool { return s.Tag == "move" })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{a.AgentID}, agentIDs(got)); diff != "" {
		t.Errorf("adopted (-want +got):\n%s", diff)
	}
	if _, ok := cur.ByAgentID(b.AgentID); ok {
		t.Error("a session take refused was moved")
	}
	left := openTest(t, "session-aaaaaaaa", nil)
	if diff := cmp.Diff(map[string]Status{b.AgentID: StatusClosed}, statuses(left)); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
}
