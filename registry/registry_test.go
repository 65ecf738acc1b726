package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/google/go-cmp/cmp"
)

// statuses returns agent_id → status of every session.
func statuses(r *Registry) map[string]Status {
	m := make(map[string]Status)
	for _, s := range r.List(Filter{}) {
		m[s.AgentID] = s.Status
	}
	return m
}

// mustAdd adds a session or fails the test.
func mustAdd(t *testing.T, r *Registry, s Session) Session {
	t.Helper()
	got, err := r.Add(s)
	if err != nil {
		t.Fatalf("Add(%s): %v", s.AgentID, err)
	}
	return got
}

// A session of another agent kind gets an agent_id that names its kind.
func TestAddAgentIDNamesTheKind(t *testing.T) {
	testHome(t)
	r := openTest(t, "arch", newFakeClock())
	for _, kind := range []string{"", "codex", "claude", "my_agent-2"} {
		got := mustAdd(t, r, Session{Identity: "id-" + strings.Trim(kind, "_"), Backend: kind})
		want := kind
		if want == "" {
			want = DefaultKind
		}
		if err := ValidateAgentID(got.AgentID); err != nil || !strings.HasPrefix(got.AgentID, want+"-") || len(got.AgentID) != len(want)+1+26 {
			t.Errorf("Add with Backend %q: agent_id %q (%v), want %s- and 26 digits", kind, got.AgentID, err, want)
		}
	}
}

func TestAddDefaultsAndPersists(t *testing.T) {
	home := testHome(t)
	clock := newFakeClock()
	r := openTest(t, "arch", clock)
	got := mustAdd(t, r, Session{Identity: "arch", Cwd: "/src"})
	if err := ValidateAgentID(got.AgentID); err != nil || !strings.HasPrefix(got.AgentID, "codex-") {
		t.Errorf("generated agent_id %q: %v", got.AgentID, err)
	}
	want := Session{AgentID: got.AgentID, Backend: "codex", Identity: "arch", Team: "team", Cwd: "/src",
		StartedAt: clock.Now(), LastActive: clock.Now(), Status: StatusActive}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Add (-want +got):\n%s", diff)
	}
	wantPath := filepath.Join(home, ".config", "atm", "agent-sessions", "team", "arch", "registry.json")
	if r.Path() != wantPath {
		t.Errorf("Path() = %s, want %s", r.Path(), wantPath)
	}
	data, err := os.ReadFile(wantPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Session{want}, st.sessions); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if !bytes.HasPrefix(data, []byte("{\n  \"version\": 1,\n  \"sessions\": [\n    {\n      \"agent_id\"")) {
		t.Errorf("file is not pretty-printed as expected:\n%s", data)
	}
	if _, err := r.Add(Session{AgentID: got.AgentID, Identity: "other", Status: StatusClosed}); !errors.Is(err, ErrSessionExists) {
		t.Errorf("Add of a duplicate agent_id: err = %v, want ErrSessionExists", err)
	}
}

func TestOpenMarksLiveSessionsStale(t *testing.T) {
	testHome(t)
	r := openTest(t, "inst", nil)
	for id, st := range map[string]Status{
		"codex-a": StatusActive, "codex-b": StatusBusy, "codex-c": StatusIdle,
		"codex-d": StatusClosed, "codex-e": StatusInterrupted, "codex-f": StatusStale,
	} {
		mustAdd(t, r, Session{AgentID: id, Identity: "id-" + id, Status: st, ThreadState: ThreadBusy})
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	r2, err := Open(Config{Team: "team", Identity: "inst", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	want := map[string]Status{
		"codex-a": StatusStale, "codex-b": StatusStale, "codex-c": StatusStale,
		"codex-d": StatusClosed, "codex-e": StatusInterrupted, "codex-f": StatusStale,
	}
	if diff := cmp.Diff(want, statuses(r2)); diff != "" {
		t.Errorf("statuses after reopen (-want +got):\n%s", diff)
	}
	if s, _ := r2.ByAgentID("codex-b"); s.ThreadState != ThreadClosed {
		t.Errorf("stale session thread_state = %q, want closed", s.ThreadState)
	}
	if got := strings.Count(logs.String(), "marked stale"); got != 3 {
		t.Errorf("logged %d stale warnings, want 3:\n%s", got, logs.String())
	}
	// The stale marking was persisted.
	insts, err := r2.Dir().Scan()
	if err != nil || len(insts) != 1 {
		t.Fatalf("Scan = %v, %v", insts, err)
	}
	for _, s := range insts[0].Sessions {
		if s.Status != want[s.AgentID] {
			t.Errorf("on disk %s is %s, want %s", s.AgentID, s.Status, want[s.AgentID])
		}
	}
	// Stale sessions hold no identity: another instance can bind them.
	other := openTest(t, "other", nil)
	for _, id := range []string{"id-codex-a", "id-codex-b", "id-codex-c", "id-codex-d"} {
		mustAdd(t, other, Session{Identity: id})
	}
	if _, ok := r2.ByIdentity("id-codex-a"); ok {
		t.Error("ByIdentity found a stale session")
	}
}

func TestOpenMovesCorruptFileAside(t *testing.T) {
	tests := []struct {
		name    string
		content string
	}{
		{"garbage", "{not json"},
		{"truncated", `{"version":1,"sessions":[{"agent_id":"codex-1",`},
		{"null", "null"},
		{"wrong type", `{"version":1,"sessions":{"a":1}}`},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := testHome(t)
			dir := filepath.Join(home, ".config", "atm", "agent-sessions", "team", "inst")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "registry.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			r, err := Open(Config{Team: "team", Identity: "inst", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: newFakeClock().Now})
			if err != nil {
				t.Fatalf("Open with a corrupt file: %v", err)
			}
			defer r.Close()
			if got := r.List(Filter{}); len(got) != 0 {
				t.Errorf("registry holds %d sessions, want none", len(got))
			}
			aside := path + ".corrupt-20260301T100000.000000000Z"
			kept, err := os.ReadFile(aside)
			if err != nil {
				t.Fatalf("corrupt file not kept: %v", err)
			}
			if string(kept) != tt.content {
				t.Errorf("moved-aside content = %q, want %q", kept, tt.content)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "moved aside") {
				t.Errorf("no warning logged:\n%s", logs.String())
			}
			mustAdd(t, r, Session{Identity: "x"})
			if got := len(r.List(Filter{})); got != 1 {
				t.Errorf("after Add: %d sessions", got)
			}
		})
	}
}

func TestOpenRefusesNewerVersion(t *testing.T) {
	home := testHome(t)
	dir := filepath.Join(home, ".config", "atm", "agent-sessions", "team", "inst")
	os.MkdirAll(dir, 0o700)
	content := `{"version": 2, "sessions": []}`
	os.WriteFile(filepath.Join(dir, "registry.json"), []byte(content), 0o600)
	_, err := Open(Config{Team: "team", Identity: "inst"})
	if !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("Open = %v, want ErrUnsupportedVersion", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "registry.json")); string(got) != content {
		t.Errorf("file changed to %q", got)
	}
	// The failed Open released the instance identity.
	r := openTest(t, "other", nil)
	if _, err := r.Add(Session{Identity: "inst"}); err != nil {
		t.Errorf("instance identity still held after a failed Open: %v", err)
	}
}

func TestUnknownFieldsSurviveRewrite(t *testing.T) {
	home := testHome(t)
	dir := filepath.Join(home, ".config", "atm", "agent-sessions", "team", "inst")
	os.MkdirAll(dir, 0o700)
	content := `{"version":1,"written_by":{"tool":"future","v":3},"sessions":[
	 {"agent_id":"codex-old","backend":"codex","backend_id":"t1","identity":"a","team":"team","status":"closed","thread_state":"closed",
	  "started_at":"2026-01-01T00:00:00Z","last_active":"2026-01-01T00:00:00Z","model":"gpt-5","subscriptions":["x"]}]}`
	os.WriteFile(filepath.Join(dir, "registry.json"), []byte(content), 0o600)
	r := openTest(t, "inst", nil)
	mustAdd(t, r, Session{Identity: "b"})
	if _, err := r.Update("codex-old", func(s *Session) { s.Tag = "touched" }); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(r.Path())
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"tool": "future", "v": 3.0}, top["written_by"]); diff != "" {
		t.Errorf("top-level unknown field (-want +got):\n%s", diff)
	}
	old := top["sessions"].([]any)[0].(map[string]any)
	if diff := cmp.Diff([]any{"gpt-5", []any{"x"}, "touched"}, []any{old["model"], old["subscriptions"], old["tag"]}); diff != "" {
		t.Errorf("session unknown fields (-want +got):\n%s", diff)
	}
}

func TestPermissions(t *testing.T) {
	home := testHome(t)
	r := openTest(t, "inst", nil)
	s := mustAdd(t, r, Session{Identity: "worker", BackendID: "thread-1"})
	if err := r.Dir().WriteSummary(s.Identity, s.BackendID, "sum"); err != nil {
		t.Fatal(err)
	}
	a, err := r.Dir().OpenAudit(AuditConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Append(Entry{Event: EventCodex}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(home, ".config", "atm", "agent-sessions")
	want := map[string]fs.FileMode{
		".":                               fs.ModeDir | 0o700,
		"team":                            fs.ModeDir | 0o700,
		"team/inst":                       fs.ModeDir | 0o700,
		"team/inst.lock":                  0o600,
		"team/inst.holder":                0o600,
		"team/worker.lock":                0o600,
		"team/worker.holder":              0o600,
		"team/inst/registry.json":         0o600,
		"team/worker":                     fs.ModeDir | 0o700,
		"team/worker/thread-1":            fs.ModeDir | 0o700,
		"team/worker/thread-1/summary.md": 0o600,
		"team/audit.jsonl":                0o600,
	}
	got := make(map[string]fs.FileMode)
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		got[filepath.ToSlash(rel)] = fi.Mode()
		return nil
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
}

func TestNamesAreValidated(t *testing.T) {
	testHome(t)
	for _, cfg := range []Config{
		{Team: "", Identity: "x"},
		{Team: "../etc", Identity: "x"},
		{Team: "t", Identity: "a/b"},
		{Team: "t", Identity: ".."},
		{Team: "t", Identity: "nul\x00"},
	} {
		if _, err := Open(cfg); !errors.Is(err, atmclient.ErrInvalidName) {
			t.Errorf("Open(%q, %q) = %v, want ErrInvalidName", cfg.Team, cfg.Identity, err)
		}
	}
	r := openTest(t, "inst", nil)
	for _, s := range []Session{
		{Identity: "../../x"},
		{Identity: "ok", AgentID: "codex:thread_abc"},
		{Identity: "ok", AgentID: "a/b"},
		{Identity: "ok", BackendID: "../x"},
		{Identity: "ok", BackendID: `th?1`},
	} {
		if _, err := r.Add(s); !errors.Is(err, atmclient.ErrInvalidName) {
			t.Errorf("Add(%+v) = %v, want ErrInvalidName", s, err)
		}
	}
	if got := r.List(Filter{}); len(got) != 0 {
		t.Errorf("invalid sessions were added: %v", got)
	}
}

func TestValidateAgentID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"codex-01jabcdefghjkmnpqrstvwxyz0", true},
		{"codex:thread_abc123", false},
		{"a<b", false},
		{`a"b`, false},
		{"a|b", false},
		{"a*b", false},
		{"trailing.", false},
		{"", false},
		{"a\\b", false},
		{"nul", false},
		{"COM1.txt", false},
		{"console", true},
	}
	for _, tt := range tests {
		err := ValidateAgentID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateAgentID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
	}
}

func TestUpdate(t *testing.T) {
	testHome(t)
	clock := newFakeClock()
	r := openTest(t, "inst", clock)
	s := mustAdd(t, r, Session{AgentID: "codex-1", Identity: "w", Status: StatusBusy, ThreadState: ThreadBusy})
	clock.Advance(time.Minute)
	got, err := r.Update("codex-1", func(s *Session) {
		s.BackendID = "thread-9"
		s.Status, s.ThreadState = StatusIdle, ThreadIdle
	})
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.BackendID, want.Status, want.ThreadState, want.LastActive = "thread-9", StatusIdle, ThreadIdle, clock.Now()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Update (-want +got):\n%s", diff)
	}
	if _, err := r.Update("codex-1", func(s *Session) { s.AgentID = "codex-2" }); err == nil {
		t.Error("Update changed the agent_id")
	}
	if _, err := r.Update("codex-nope", func(*Session) {}); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("Update of a missing session = %v, want ErrSessionNotFound", err)
	}
	if err := r.Remove("codex-nope"); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("Remove of a missing session = %v, want ErrSessionNotFound", err)
	}
	if got, _ := r.ByAgentID("codex-1"); got.BackendID != "thread-9" {
		t.Errorf("stored backend_id = %q", got.BackendID)
	}
}

// TestWriteFailureRollsBack makes persisting impossible (a directory sits
// where the registry file goes) and checks that the failed change is not
// kept in memory and its identity claim is released.
func TestWriteFailureRollsBack(t *testing.T) {
	testHome(t)
	r := openTest(t, "inst", nil)
	mustAdd(t, r, Session{AgentID: "codex-1", Identity: "w1", Status: StatusClosed})
	if err := os.Remove(r.Path()); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(r.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	before := r.List(Filter{})
	if _, err := r.Add(Session{AgentID: "codex-2", Identity: "w2"}); err == nil {
		t.Error("Add succeeded without a writable file")
	}
	if _, err := r.Update("codex-1", func(s *Session) { s.Status = StatusBusy }); err == nil {
		t.Error("Update succeeded without a writable file")
	}
	if err := r.Remove("codex-1"); err == nil {
		t.Error("Remove succeeded without a writable file")
	}
	if diff := cmp.Diff(before, r.List(Filter{})); diff != "" {
		t.Errorf("sessions changed by failed writes (-before +after):\n%s", diff)
	}
	entries, _ := os.ReadDir(filepath.Dir(r.Path()))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("pending file left behind: %s", e.Name())
		}
	}
	// Neither w1 nor w2 stayed claimed.
	other := openTest(t, "other", nil)
	mustAdd(t, other, Session{Identity: "w1"})
	mustAdd(t, other, Session{Identity: "w2"})
}

func TestClosedRegistry(t *testing.T) {
	testHome(t)
	r := openTest(t, "inst", nil)
	mustAdd(t, r, Session{AgentID: "codex-1", Identity: "w"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := r.Add(Session{Identity: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v", err)
	}
	if _, err := r.Update("codex-1", func(*Session) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Update after Close = %v", err)
	}
	if _, err := r.CloseSession("codex-1"); !errors.Is(err, ErrClosed) {
		t.Errorf("CloseSession after Close = %v", err)
	}
	if err := r.Remove("codex-1"); !errors.Is(err, ErrClosed) {
		t.Errorf("Remove after Close = %v", err)
	}
	if _, err := r.Prune(0); !errors.Is(err, ErrClosed) {
		t.Errorf("Prune after Close = %v", err)
	}
	if err := r.Persist(); !errors.Is(err, ErrClosed) {
		t.Errorf("Persist after Close = %v", err)
	}
	// Close released the instance and the session identity.
	r2 := openTest(t, "inst", nil)
	mustAdd(t, r2, Session{Identity: "w"})
}
