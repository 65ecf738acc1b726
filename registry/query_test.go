package registry

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/google/go-cmp/cmp"
)

// agentIDs returns the agent_ids of sessions, in order.
func agentIDs(ss []Session) []string {
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.AgentID)
	}
	return ids
}

func TestQueries(t *testing.T) {
	testHome(t)
	clock := newFakeClock()
	r := openTest(t, "inst", clock)
	add := func(id, identity, repo string, st Status, backend string) {
		t.Helper()
		clock.Advance(time.Minute)
		mustAdd(t, r, Session{AgentID: id, Identity: identity, RepoName: repo, RepoRoot: "/src/" + repo, Status: st, BackendID: backend})
	}
	add("codex-1", "arch", "app", StatusClosed, "th-1")
	add("codex-2", "arch", "app", StatusStale, "th-2")
	add("codex-3", "arch", "lib", StatusBusy, "th-3")
	add("codex-4", "dev", "lib", StatusIdle, "")
	add("codex-5", "dev", "app", StatusClosed, "th-5")

	lists := []struct {
		name string
		f    Filter
		want []string
	}{
		{"all", Filter{}, []string{"codex-1", "codex-2", "codex-3", "codex-4", "codex-5"}},
		{"repo name", Filter{Repo: "app"}, []string{"codex-1", "codex-2", "codex-5"}},
		{"repo root", Filter{Repo: "/src/lib"}, []string{"codex-3", "codex-4"}},
		{"identity", Filter{Identity: "dev"}, []string{"codex-4", "codex-5"}},
		{"status", Filter{Status: StatusClosed}, []string{"codex-1", "codex-5"}},
		{"combined", Filter{Repo: "app", Identity: "arch", Status: StatusStale}, []string{"codex-2"}},
		{"none", Filter{Identity: "nobody"}, nil},
	}
	for _, tt := range lists {
		if diff := cmp.Diff(tt.want, agentIDs(r.List(tt.f))); diff != "" {
			t.Errorf("List %s (-want +got):\n%s", tt.name, diff)
		}
	}

	lookups := []struct {
		name string
		got  func() (Session, bool)
		want string // "" means not found
	}{
		{"ByAgentID", func() (Session, bool) { return r.ByAgentID("codex-4") }, "codex-4"},
		{"ByAgentID missing", func() (Session, bool) { return r.ByAgentID("codex-9") }, ""},
		{"ByBackendID", func() (Session, bool) { return r.ByBackendID("th-2") }, "codex-2"},
		{"ByBackendID empty", func() (Session, bool) { return r.ByBackendID("") }, ""},
		{"ByIdentity live", func() (Session, bool) { return r.ByIdentity("arch") }, "codex-3"},
		{"ByIdentity none live", func() (Session, bool) { return r.ByIdentity("nobody") }, ""},
		{"MostRecent", func() (Session, bool) { return r.MostRecent("dev") }, "codex-5"},
		{"MostRecent none", func() (Session, bool) { return r.MostRecent("nobody") }, ""},
	}
	for _, tt := range lookups {
		s, ok := tt.got()
		if ok != (tt.want != "") || s.AgentID != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.name, s.AgentID, ok, tt.want)
		}
	}

	// MostRecent follows last_active, not insertion order.
	clock.Advance(time.Hour)
	if _, err := r.Update("codex-1", func(s *Session) {}); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.MostRecent("arch"); s.AgentID != "codex-1" {
		t.Errorf("MostRecent(arch) after touching codex-1 = %s", s.AgentID)
	}

	// Returned sessions are copies.
	s, _ := r.ByAgentID("codex-1")
	s.Tag = "changed"
	if again, _ := r.ByAgentID("codex-1"); again.Tag != "" {
		t.Error("changing a returned session changed the registry")
	}
}

func TestPrune(t *testing.T) {
	testHome(t)
	clock := newFakeClock()
	r := openTest(t, "inst", clock)
	d := r.Dir()
	add := func(id string, st Status) {
		t.Helper()
		s := mustAdd(t, r, Session{AgentID: id, Identity: "w-" + id, BackendID: "th-" + id, Status: st})
		if err := d.WriteSummary(s.Identity, s.BackendID, "summary of "+id); err != nil {
			t.Fatal(err)
		}
	}
	add("codex-old-closed", StatusClosed)
	add("codex-old-stale", StatusStale)
	add("codex-old-interrupted", StatusInterrupted)
	add("codex-old-live", StatusIdle)
	clock.Advance(48 * time.Hour)
	add("codex-new-closed", StatusClosed)
	clock.Advance(time.Hour)

	dropped, err := r.Prune(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"codex-old-closed", "codex-old-stale", "codex-old-interrupted"}, agentIDs(dropped)); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"codex-old-live", "codex-new-closed"}, agentIDs(r.List(Filter{}))); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	for _, s := range dropped {
		if d.HasSummary(s.Identity, s.BackendID) {
			t.Errorf("summary of pruned %s still there", s.AgentID)
		}
		if _, err := os.Stat(filepath.Join(d.Path(), s.Identity, s.BackendID)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("summary directory of pruned %s still there: %v", s.AgentID, err)
		}
	}
	for _, id := range []string{"codex-old-live", "codex-new-closed"} {
		if !d.HasSummary("w-"+id, "th-"+id) {
			t.Errorf("summary of kept %s removed", id)
		}
	}
	// Persisted: a reopened registry sees the pruned state.
	r.Close()
	r2 := openTest(t, "inst", clock)
	if diff := cmp.Diff([]string{"codex-old-live", "codex-new-closed"}, agentIDs(r2.List(Filter{}))); diff != "" {
		t.Errorf("after reopen (-want +got):\n%s", diff)
	}
	// The live session became stale on reopen, and is old enough to go.
	if dropped, err := r2.Prune(24 * time.Hour); err != nil || !cmp.Equal(agentIDs(dropped), []string{"codex-old-live"}) {
		t.Errorf("Prune after reopen = %v, %v; want [codex-old-live]", agentIDs(dropped), err)
	}
	if dropped, err := r2.Prune(24 * time.Hour); err != nil || dropped != nil {
		t.Errorf("third Prune = %v, %v; want nothing", agentIDs(dropped), err)
	}
}

func TestSummaries(t *testing.T) {
	home := testHome(t)
	d, err := TeamDir("", "team")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".config", "atm", "agent-sessions", "team"); d.Path() != want {
		t.Errorf("TeamDir path = %s, want %s (from ATM_HOME)", d.Path(), want)
	}
	if _, err := d.ReadSummary("arch", "th-1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadSummary of none = %v, want ErrNotExist", err)
	}
	if ids, err := d.Summaries("arch"); err != nil || ids != nil {
		t.Errorf("Summaries of none = %v, %v", ids, err)
	}
	text := "# Summary\n\nDone: auth refresh. Next: tests. ünïcödé\n"
	for _, id := range []string{"th-2", "th-1"} {
		if err := d.WriteSummary("arch", id, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.WriteSummary("arch", "th-1", text+"v2"); err != nil {
		t.Fatal(err)
	}
	if got, err := d.ReadSummary("arch", "th-1"); err != nil || got != text+"v2" {
		t.Errorf("ReadSummary = %q, %v", got, err)
	}
	if !d.HasSummary("arch", "th-2") || d.HasSummary("arch", "th-3") || d.HasSummary("dev", "th-1") {
		t.Error("HasSummary wrong")
	}
	// A thread directory without summary.md does not count.
	os.MkdirAll(filepath.Join(d.Path(), "arch", "th-0"), 0o700)
	if ids, err := d.Summaries("arch"); err != nil || !cmp.Equal(ids, []string{"th-1", "th-2"}) {
		t.Errorf("Summaries = %v, %v", ids, err)
	}
	entries, _ := os.ReadDir(filepath.Join(d.Path(), "arch", "th-1"))
	if len(entries) != 1 {
		t.Errorf("summary directory holds %d files, want only summary.md", len(entries))
	}
	for _, bad := range [][2]string{{"../x", "th"}, {"arch", "../../x"}, {"arch", "a:b"}, {"arch", ""}} {
		if err := d.WriteSummary(bad[0], bad[1], "x"); !errors.Is(err, atmclient.ErrInvalidName) {
			t.Errorf("WriteSummary(%q, %q) = %v, want ErrInvalidName", bad[0], bad[1], err)
		}
	}
}

func TestScan(t *testing.T) {
	testHome(t)
	a := openTest(t, "inst-a", nil)
	b := openTest(t, "inst-b", nil)
	mustAdd(t, a, Session{AgentID: "codex-a1", Identity: "inst-a", Status: StatusBusy})
	mustAdd(t, a, Session{AgentID: "codex-a2", Identity: "w", Status: StatusClosed})
	mustAdd(t, b, Session{AgentID: "codex-b1", Identity: "x", Status: StatusIdle, BackendID: "th-b1"})
	if err := b.Dir().WriteSummary("x", "th-b1", "s"); err != nil { // summary-only dir "x"
		t.Fatal(err)
	}
	corrupt := filepath.Join(a.Dir().Path(), "broken", "registry.json")
	os.MkdirAll(filepath.Dir(corrupt), 0o700)
	os.WriteFile(corrupt, []byte("{"), 0o600)
	before, _ := os.ReadFile(a.Path())

	insts, err := a.Dir().Scan()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Identity string
		Sessions map[string]Status
		Err      bool
	}
	var got []row
	for _, in := range insts {
		m := make(map[string]Status)
		for _, s := range in.Sessions {
			m[s.AgentID] = s.Status
		}
		got = append(got, row{in.Identity, m, in.Err != nil})
	}
	want := []row{
		{"broken", map[string]Status{}, true},
		{"inst-a", map[string]Status{"codex-a1": StatusBusy, "codex-a2": StatusClosed}, false},
		{"inst-b", map[string]Status{"codex-b1": StatusIdle}, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
	// Read-only: nothing was rewritten, no identity was taken.
	if after, _ := os.ReadFile(a.Path()); string(after) != string(before) {
		t.Error("Scan rewrote a registry")
	}
	mustAdd(t, b, Session{Identity: "broken"})

	empty, err := TeamDir("", "no-such-team")
	if err != nil {
		t.Fatal(err)
	}
	if insts, err := empty.Scan(); err != nil || insts != nil {
		t.Errorf("Scan of a missing team = %v, %v", insts, err)
	}
}
