package registry

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSessionJSON(t *testing.T) {
	start := time.Date(2026, 2, 17, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    Session
		want string
	}{
		{
			name: "empty optional fields are null",
			s: Session{AgentID: "codex-1", Backend: "codex", Identity: "arch", Team: "t", Cwd: "/tmp",
				StartedAt: start, LastActive: start, Status: StatusBusy, ThreadState: ThreadBusy},
			want: `{"agent_id":"codex-1","backend":"codex","backend_id":null,"identity":"arch","team":"t",` +
				`"repo_root":null,"repo_name":null,"branch":null,"cwd":"/tmp","started_at":"2026-02-17T10:00:00Z",` +
				`"last_active":"2026-02-17T10:00:00Z","status":"busy","thread_state":"busy","tag":null,"role":null,"agent_source":null,` +
				`"turns":0,"last_result":null}`,
		},
		{
			name: "extra fields follow in key order, known keys win",
			s: Session{AgentID: "codex-2", Backend: "codex", BackendID: "th-1", Identity: "arch", Team: "t",
				RepoRoot: "/r", RepoName: "r", Branch: "main", Cwd: "/r", StartedAt: start,
				LastActive: start.In(time.FixedZone("X", 3600)), Status: StatusIdle, ThreadState: ThreadIdle,
				Tag: "x", Role: "dev", AgentSource: "a.md", Turns: 3, LastResult: "done: tests pass", HandedTo: "141a23ea",
				Extra: map[string]json.RawMessage{"zz": json.RawMessage(`[1,2]`), "future": json.RawMessage(`{"a":true}`), "status": json.RawMessage(`"bogus"`)}},
			want: `{"agent_id":"codex-2","backend":"codex","backend_id":"th-1","identity":"arch","team":"t",` +
				`"repo_root":"/r","repo_name":"r","branch":"main","cwd":"/r","started_at":"2026-02-17T10:00:00Z",` +
				`"last_active":"2026-02-17T10:00:00Z","status":"idle","thread_state":"idle","tag":"x","role":"dev","agent_source":"a.md",` +
				`"turns":3,"last_result":"done: tests pass","handed_to":"141a23ea","future":{"a":true},"zz":[1,2]}`,
		},
		{
			name: "a session without isolation: the HEAD it started from",
			s: Session{AgentID: "codex-4", Backend: "codex", Identity: "carol", Team: "t", RepoRoot: "/r", RepoName: "r", Branch: "main", Cwd: "/r",
				StartedAt: start, LastActive: start, Status: StatusIdle, ThreadState: ThreadIdle, StartHead: "5e1c0a2d1f3b"},
			want: `{"agent_id":"codex-4","backend":"codex","backend_id":null,"identity":"carol","team":"t",` +
				`"repo_root":"/r","repo_name":"r","branch":"main","cwd":"/r","started_at":"2026-02-17T10:00:00Z",` +
				`"last_active":"2026-02-17T10:00:00Z","status":"idle","thread_state":"idle","tag":null,"role":null,"agent_source":null,` +
				`"turns":0,"last_result":null,"start_head":"5e1c0a2d1f3b"}`,
		},
		{
			name: "a session on a host",
			s: Session{AgentID: "claude-5", Backend: "claude", Identity: "dave", Team: "t", RepoRoot: "/srv/r", RepoName: "r", Branch: "main", Cwd: "/srv/r",
				StartedAt: start, LastActive: start, Status: StatusIdle, ThreadState: ThreadIdle, Host: "box"},
			want: `{"agent_id":"claude-5","backend":"claude","backend_id":null,"identity":"dave","team":"t",` +
				`"repo_root":"/srv/r","repo_name":"r","branch":"main","cwd":"/srv/r","started_at":"2026-02-17T10:00:00Z",` +
				`"last_active":"2026-02-17T10:00:00Z","status":"idle","thread_state":"idle","tag":null,"role":null,"agent_source":null,` +
				`"turns":0,"last_result":null,"host":"box"}`,
		},
		{
			name: "a fork: its parent and how it got the parent's history",
			s: Session{AgentID: "codex-5", Backend: "codex", BackendID: "th-9", Identity: "dave", Team: "t", Cwd: "/r",
				StartedAt: start, LastActive: start, Status: StatusIdle, ThreadState: ThreadIdle,
				ForkedFrom: &Fork{AgentID: "codex-2", Thread: "th-1", How: ForkThread}},
			want: `{"agent_id":"codex-5","backend":"codex","backend_id":"th-9","identity":"dave","team":"t",` +
				`"repo_root":null,"repo_name":null,"branch":null,"cwd":"/r","started_at":"2026-02-17T10:00:00Z",` +
				`"last_active":"2026-02-17T10:00:00Z","status":"idle","thread_state":"idle","tag":null,"role":null,"agent_source":null,` +
				`"turns":0,"last_result":null,"forked_from":{"agent_id":"codex-2","thread":"th-1","how":"thread"}}`,
		},
		{
			name: "an isolated session's worktree",
			s: Session{AgentID: "codex-3", Backend: "codex", Identity: "alice", Team: "t", Cwd: "/r/.atm/worktrees/alice/src",
				StartedAt: start, LastActive: start, Status: StatusClosed, ThreadState: ThreadClosed,
				Worktree: &Worktree{Name: "alice", Path: "/r/.atm/worktrees/alice", Branch: "atm/alice", Base: "5e1c0a2", BaseRef: "HEAD",
					Source: "/r", PortBase: 20010, PortCount: 10, Released: "kept", Stat: "1 files changed, 2 insertions(+), 0 deletions(-)"}},
			want: `{"agent_id":"codex-3","backend":"codex","backend_id":null,"identity":"alice","team":"t",` +
				`"repo_root":null,"repo_name":null,"branch":null,"cwd":"/r/.atm/worktrees/alice/src","started_at":"2026-02-17T10:00:00Z",` +
				`"last_active":"2026-02-17T10:00:00Z","status":"closed","thread_state":"closed","tag":null,"role":null,"agent_source":null,` +
				`"turns":0,"last_result":null,"worktree":{"name":"alice","path":"/r/.atm/worktrees/alice","branch":"atm/alice","base":"5e1c0a2",` +
				`"base_ref":"HEAD","source":"/r","port_base":20010,"port_count":10,"released":"kept","stat":"1 files changed, 2 insertions(+), 0 deletions(-)"}}`,
		},
		{
			name: "usage, the model and a raised budget",
			s: Session{AgentID: "codex-4", Backend: "mock", Identity: "bob", Team: "t", Cwd: "/r",
				StartedAt: start, LastActive: start, Status: StatusIdle, ThreadState: ThreadIdle, Model: "mock-small", BudgetTokens: 20000,
				Usage: &Usage{Tokens: Tokens{InputTokens: 3200, CachedInputTokens: 1000, OutputTokens: 400, TotalTokens: 3600,
					Cost: &Cost{Amount: 0.02, Currency: "USD"}}, Thread: "th-9", Last: &Tokens{InputTokens: 2000, OutputTokens: 100, TotalTokens: 2100}}},
			want: `{"agent_id":"codex-4","backend":"mock","backend_id":null,"identity":"bob","team":"t",` +
				`"repo_root":null,"repo_name":null,"branch":null,"cwd":"/r","started_at":"2026-02-17T10:00:00Z",` +
				`"last_active":"2026-02-17T10:00:00Z","status":"idle","thread_state":"idle","tag":null,"role":null,"agent_source":null,` +
				`"turns":0,"last_result":null,"model":"mock-small","usage":{"input_tokens":3200,"cached_input_tokens":1000,"output_tokens":400,` +
				`"total_tokens":3600,"cost":{"amount":0.02,"currency":"USD"},"thread":"th-9","last":{"input_tokens":2000,"cached_input_tokens":0,` +
				`"output_tokens":100,"total_tokens":2100}},"budget_tokens":20000}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Marshal (-want +got):\n%s", diff)
			}
			var back Session
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			want := tt.s
			want.LastActive = want.LastActive.UTC()
			delete(want.Extra, "status")
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessionRejectsInvalidExtra(t *testing.T) {
	s := Session{AgentID: "codex-1", Extra: map[string]json.RawMessage{"x": json.RawMessage(`{`)}}
	if _, err := json.Marshal(s); err == nil {
		t.Error("Marshal with an invalid extra value succeeded")
	}
}

func TestStatusLive(t *testing.T) {
	want := map[Status]bool{
		StatusActive: true, StatusBusy: true, StatusIdle: true,
		StatusClosed: false, StatusStale: false, StatusInterrupted: false, "": false,
	}
	for st, live := range want {
		if got := st.Live(); got != live {
			t.Errorf("%q.Live() = %v, want %v", st, got, live)
		}
	}
}

// TestTeamBudget: a budget set at run time is read back by every serve of
// the team; none set reads not ok.
func TestTeamBudget(t *testing.T) {
	d, err := TeamDir(t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := d.ReadTeamBudget(); ok || err != nil {
		t.Fatalf("ReadTeamBudget before any = ok %v, err %v; want neither", ok, err)
	}
	at := time.Date(2026, 2, 17, 10, 0, 0, 0, time.UTC)
	want := TeamBudget{Tokens: 90000, By: "team-lead", At: at}
	if err := d.WriteTeamBudget(want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := d.ReadTeamBudget()
	if !ok || err != nil {
		t.Fatalf("ReadTeamBudget = ok %v, err %v", ok, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadTeamBudget (-want +got):\n%s", diff)
	}
}

// TestSessionKind: a record's agent kind is its Backend, and DefaultKind
// for a record that names none (written before kinds).
func TestSessionKind(t *testing.T) {
	for _, tt := range []struct{ backend, want string }{{"", DefaultKind}, {"codex", "codex"}, {"claude", "claude"}} {
		if got := (Session{Backend: tt.backend}).Kind(); got != tt.want {
			t.Errorf("Session{Backend: %q}.Kind() = %q, want %q", tt.backend, got, tt.want)
		}
	}
}
