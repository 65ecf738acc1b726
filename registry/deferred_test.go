package registry

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// openDeferred opens a Deferred registry of identity in team "team" under
// ATM_HOME and closes it at the end of the test.
func openDeferred(t testing.TB, identity string) (*Registry, error) {
	t.Helper()
	r, err := Open(Config{Team: "team", Identity: identity, Deferred: true})
	if err == nil {
		t.Cleanup(func() { r.Close() })
	}
	return r, err
}

// filesUnder lists every path under root, relative to it.
func filesUnder(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeferredCreatesNothing: a Deferred registry and audit log of an
// instance that has no directory leave nothing on disk while nothing is
// recorded, whatever is read, persisted, pruned or closed.
func TestDeferredCreatesNothing(t *testing.T) {
	home := testHome(t)
	r, err := openDeferred(t, "proxy")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	a, err := r.Dir().OpenAudit(AuditConfig{Deferred: true})
	if err != nil {
		t.Fatalf("OpenAudit: %v", err)
	}
	if got := r.List(Filter{}); len(got) != 0 {
		t.Errorf("List = %v, want nothing", got)
	}
	if _, ok := r.ByAgentID("codex-x"); ok {
		t.Error("ByAgentID found a session in an empty registry")
	}
	if err := r.Persist(); err != nil {
		t.Errorf("Persist: %v", err)
	}
	if dropped, err := r.Prune(0); err != nil || len(dropped) != 0 {
		t.Errorf("Prune = %v, %v; want nothing", dropped, err)
	}
	if _, err := r.Update("codex-x", func(*Session) {}); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("Update of an unknown session: %v, want ErrSessionNotFound", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("audit Close: %v", err)
	}
	if err := a.Append(Entry{Event: EventCodex}); !errors.Is(err, ErrAuditClosed) {
		t.Errorf("Append after Close: %v, want ErrAuditClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if got := filesUnder(t, home); len(got) != 0 {
		t.Errorf("files under ATM_HOME: %v, want none", got)
	}
}

// TestDeferredClaimsAtFirstSession: the first Add claims the instance
// (so a rival's Add then conflicts and changes nothing), creates its
// directory, and loads what another process wrote meanwhile; once the
// directory exists, a Deferred Open claims at once. The audit log is
// created by its first Append.
func TestDeferredClaimsAtFirstSession(t *testing.T) {
	home := testHome(t)
	first, err := openDeferred(t, "proxy")
	if err != nil {
		t.Fatalf("Open first: %v", err)
	}
	rival, err := openDeferred(t, "proxy")
	if err != nil {
		t.Fatalf("Open rival (nothing claimed yet): %v", err)
	}

	// Meanwhile an ordinary Open of the instance records a session and ends.
	earlier, err := Open(Config{Team: "team", Identity: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	old := mustAdd(t, earlier, Session{Identity: "codex1"})
	if err := earlier.Close(); err != nil {
		t.Fatal(err)
	}

	added := mustAdd(t, first, Session{Identity: "codex2"})
	want := map[string]Status{old.AgentID: StatusStale, added.AgentID: StatusActive}
	if diff := cmp.Diff(want, statuses(first)); diff != "" {
		t.Errorf("statuses after the first Add (-want +got):\n%s", diff)
	}

	if _, err := rival.Add(Session{Identity: "codex3"}); !errors.Is(err, ErrIdentityConflict) {
		t.Errorf("rival Add: %v, want ErrIdentityConflict", err)
	}
	var conflict *ConflictError
	if _, err := rival.Add(Session{Identity: "codex3"}); !errors.As(err, &conflict) || conflict.Identity != "proxy" {
		t.Errorf("rival Add: %v, want a ConflictError on proxy", err)
	}
	if got := rival.List(Filter{}); len(got) != 0 {
		t.Errorf("rival holds %v after a failed Add, want nothing", agentIDs(got))
	}

	if _, err := openDeferred(t, "proxy"); !errors.As(err, &conflict) {
		t.Errorf("Deferred Open of a claimed instance with a directory: %v, want a ConflictError", err)
	}

	a, err := first.Dir().OpenAudit(AuditConfig{Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	audit := filepath.Join(first.Dir().Path(), auditFile)
	if _, err := os.Stat(audit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("audit log before the first Append: %v, want none", err)
	}
	if err := a.Append(Entry{Event: EventCodex, AgentID: added.AgentID}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	entries, _ := readAudit(t, first.Dir())
	if len(entries) != 1 || entries[0].AgentID != added.AgentID {
		t.Errorf("audit entries = %+v, want the one appended", entries)
	}
	if got, want := filepath.Dir(first.Path()), filepath.Join(home, ".config", "atm", "agent-sessions", "team", "proxy"); got != want {
		t.Errorf("instance directory %s, want %s", got, want)
	}
}

// TestDeferredAdopt: a Deferred registry that adopts an ended instance's
// sessions claims its own instance first; with nothing to adopt it
// creates nothing of its own.
func TestDeferredAdopt(t *testing.T) {
	testHome(t)
	ended, err := Open(Config{Team: "team", Identity: "session-aaaaaaaa"})
	if err != nil {
		t.Fatal(err)
	}
	s := mustAdd(t, ended, Session{Identity: "codex1", Status: StatusClosed})
	if err := ended.Close(); err != nil {
		t.Fatal(err)
	}
	empty, err := Open(Config{Team: "team", Identity: "session-cccccccc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := empty.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := openDeferred(t, "session-bbbbbbbb")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Adopt("session-cccccccc"); err != nil || len(got) != 0 {
		t.Fatalf("Adopt of an empty instance: %v, %v", agentIDs(got), err)
	}
	if _, err := os.Stat(filepath.Dir(r.Path())); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("instance directory after adopting nothing: %v, want none", err)
	}
	got, err := r.Adopt("session-aaaaaaaa")
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	if diff := cmp.Diff([]string{s.AgentID}, agentIDs(got)); diff != "" {
		t.Errorf("adopted (-want +got):\n%s", diff)
	}
	if _, err := Open(Config{Team: "team", Identity: "session-bbbbbbbb"}); !errors.As(err, new(*ConflictError)) {
		t.Errorf("Open of the adopting instance: %v, want a ConflictError (it is claimed)", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	re := openTest(t, "session-bbbbbbbb", nil)
	if diff := cmp.Diff(map[string]Status{s.AgentID: StatusClosed}, statuses(re)); diff != "" {
		t.Errorf("reopened (-want +got):\n%s", diff)
	}
}
