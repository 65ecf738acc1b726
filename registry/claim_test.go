package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// wantConflict checks that err is a *ConflictError for identity held by
// holderAgentID in this process.
func wantConflict(t *testing.T, err error, identity, holderAgentID string) {
	t.Helper()
	if !errors.Is(err, ErrIdentityConflict) {
		t.Fatalf("err = %v, want an identity conflict", err)
	}
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, not a *ConflictError", err)
	}
	want := &ConflictError{Identity: identity, HolderPID: os.Getpid(), HolderAgentID: holderAgentID}
	if diff := cmp.Diff(want, ce, cmpopts.IgnoreFields(ConflictError{}, "Since")); diff != "" {
		t.Errorf("conflict (-want +got):\n%s", diff)
	}
}

func TestIdentityClaimsInProcess(t *testing.T) {
	testHome(t)
	a := openTest(t, "inst-a", nil)
	b := openTest(t, "inst-b", nil)

	// A second instance with a held identity cannot open.
	_, err := Open(Config{Team: "team", Identity: "inst-a"})
	wantConflict(t, err, "inst-a", "")

	// One live session per identity, within and across registries.
	mustAdd(t, a, Session{AgentID: "codex-1", Identity: "w"})
	_, err = a.Add(Session{AgentID: "codex-2", Identity: "w"})
	wantConflict(t, err, "w", "codex-1")
	_, err = b.Add(Session{AgentID: "codex-3", Identity: "w"})
	wantConflict(t, err, "w", "codex-1")
	_, err = b.Add(Session{AgentID: "codex-4", Identity: "inst-a"})
	wantConflict(t, err, "inst-a", "")
	if got := len(b.List(Filter{})); got != 0 {
		t.Errorf("conflicting Add left %d sessions", got)
	}

	// A session may bind its own instance identity, but only one.
	mustAdd(t, a, Session{AgentID: "codex-5", Identity: "inst-a"})
	_, err = a.Add(Session{AgentID: "codex-6", Identity: "inst-a"})
	wantConflict(t, err, "inst-a", "codex-5")
	if s, ok := a.ByIdentity("inst-a"); !ok || s.AgentID != "codex-5" {
		t.Errorf("ByIdentity(inst-a) = %v, %v", s.AgentID, ok)
	}
	// Closing that session leaves the instance claim in place.
	if _, err := a.CloseSession("codex-5"); err != nil {
		t.Fatal(err)
	}
	_, err = b.Add(Session{AgentID: "codex-7", Identity: "inst-a"})
	wantConflict(t, err, "inst-a", "")

	// Closed sessions free their identity (FR-3.4, FR-17.8); closing twice
	// is a no-op (FR-17.9).
	c1, err := a.CloseSession("codex-1")
	if err != nil || c1.Status != StatusClosed || c1.ThreadState != ThreadClosed {
		t.Fatalf("CloseSession = %+v, %v", c1, err)
	}
	if again, err := a.CloseSession("codex-1"); err != nil || again.LastActive != c1.LastActive {
		t.Errorf("second CloseSession = %+v, %v", again, err)
	}
	mustAdd(t, b, Session{AgentID: "codex-8", Identity: "w"})

	// Resuming the closed session (FR-17.7) needs the identity back.
	_, err = a.Update("codex-1", func(s *Session) { s.Status = StatusBusy })
	wantConflict(t, err, "w", "codex-8")
	if s, _ := a.ByAgentID("codex-1"); s.Status != StatusClosed {
		t.Errorf("failed resume changed status to %s", s.Status)
	}
	if _, err := b.InterruptSession("codex-8"); err != nil {
		t.Fatal(err)
	}
	if s, _ := b.ByAgentID("codex-8"); s.Status != StatusInterrupted {
		t.Errorf("InterruptSession left status %s", s.Status)
	}
	if _, err := a.Update("codex-1", func(s *Session) { s.Status = StatusBusy }); err != nil {
		t.Fatalf("resume: %v", err)
	}

	// Changing identity of a live session moves the claim.
	if _, err := a.Update("codex-1", func(s *Session) { s.Identity = "w2" }); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, b, Session{AgentID: "codex-9", Identity: "w"})
	_, err = b.Add(Session{AgentID: "codex-10", Identity: "w2"})
	wantConflict(t, err, "w2", "codex-1")

	// Remove releases; Close releases everything.
	if err := b.Remove("codex-9"); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, a, Session{AgentID: "codex-11", Identity: "w"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"w", "w2"} {
		mustAdd(t, b, Session{Identity: id})
	}
	openTest(t, "inst-a", nil)
}

func TestClaimDiagnostics(t *testing.T) {
	home := testHome(t)
	d, err := TeamDir(home, "team")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	c, err := d.Claim("worker", "codex-42")
	if err != nil {
		t.Fatal(err)
	}
	if c.Identity() != "worker" {
		t.Errorf("Identity() = %q", c.Identity())
	}
	_, err = d.Claim("worker", "codex-43")
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("second claim = %v", err)
	}
	if ce.HolderPID != os.Getpid() || ce.HolderAgentID != "codex-42" || ce.Since.Before(before) || ce.Since.After(time.Now()) {
		t.Errorf("conflict = %+v", ce)
	}
	for _, part := range []string{`"worker"`, "codex-42", "pid " + strconv.Itoa(os.Getpid())} {
		if !strings.Contains(ce.Error(), part) {
			t.Errorf("error %q does not mention %s", ce.Error(), part)
		}
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(d.root, "worker.holder")); err == nil {
		t.Errorf("the released claim left its holder file: %q", b)
	}
	c2, err := d.Claim("worker", "codex-43")
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	c2.Release()
	if _, err := os.Stat(d.lockPath("worker")); err != nil {
		t.Errorf("lock file removed: %v", err)
	}
}

// TestClaimAcrossProcesses races two processes for one instance identity:
// exactly one wins and the loser learns the winner's pid. When the winner
// is SIGKILLed, the loser's next attempt succeeds at once.
func TestClaimAcrossProcesses(t *testing.T) {
	home := testHome(t)
	for round := range 3 {
		identity := fmt.Sprintf("racer-%d", round)
		env := []string{"ATM_HOME=" + home, "CHILD_TEAM=team", "CHILD_IDENTITY=" + identity}
		kids := []*child{startChild(t, "claim", env...), startChild(t, "claim", env...)}
		for _, k := range kids {
			k.expectPrefix("ready")
		}
		for _, k := range kids {
			k.send("open")
		}
		answers := []string{kids[0].expect(), kids[1].expect()}
		winner, loser := -1, -1
		for i, a := range answers {
			switch {
			case a == "won" && winner < 0:
				winner = i
			case strings.HasPrefix(a, "conflict ") && loser < 0:
				loser = i
			}
		}
		if winner < 0 || loser < 0 {
			t.Fatalf("round %d: answers %q, want one won and one conflict", round, answers)
		}
		if want := fmt.Sprintf("conflict %d", kids[winner].cmd.Process.Pid); answers[loser] != want {
			t.Errorf("round %d: loser said %q, want %q", round, answers[loser], want)
		}
		// This process cannot have it either.
		if _, err := Open(Config{Team: "team", Identity: identity}); !errors.Is(err, ErrIdentityConflict) {
			t.Fatalf("round %d: Open in the test process = %v, want a conflict", round, err)
		}

		kids[winner].kill()
		kids[loser].send("open")
		if got := kids[loser].expect(); got != "won" {
			t.Fatalf("round %d: after the winner died the loser said %q, want won", round, got)
		}
	}
}
