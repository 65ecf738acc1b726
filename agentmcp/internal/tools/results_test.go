package tools

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestResults: a session's life through the tools, over real inbox and
// registry files; each result's structuredContent as the client gets it
// (ids, directories and times replaced by placeholders).
func TestResults(t *testing.T) {
	h := newHarness(t)
	arch := h.ok("codex", `{"prompt":"hello","identity":"arch"}`)["agent_id"].(string)
	bg := h.ok("codex", `{"prompt":"hi","identity":"dev-1","background":true}`)["agent_id"].(string)
	h.ok("agent_wait", `{"agent_id":"`+bg+`","timeout_secs":10}`)
	norm := func(v any) any {
		return normalize(v, map[string]string{arch: "<arch>", bg: "<dev-1>", h.home: "<home>"})
	}
	pid := float64(os.Getpid())
	row := func(id, identity, thread string, turns float64) map[string]any {
		return map[string]any{"agent_id": id, "agent_name": nil, "agent_source": nil, "backend": "codex", "backend_id": thread,
			"branch": nil, "cwd": "<home>", "has_summary": false, "identity": identity, "instance": "proxy", "repo_name": nil, "repo_root": nil,
			"resumable": true, "role": nil, "serve_pid": pid, "status": "idle", "tag": nil, "team": "dev", "thread_state": "idle", "turns": turns}
	}
	closed := row("<arch>", "arch", "thread-1", 2)
	closed["status"], closed["thread_state"], closed["serve_pid"] = "closed", "closed", nil
	tests := []struct {
		tool, args string
		want       any
	}{
		{"codex-reply", `{"agent_id":"<arch>","prompt":"more"}`,
			map[string]any{"agent_id": "<arch>", "content": "echo: more", "identity": "arch", "status": "completed", "threadId": "thread-1"}},
		{"agent_sessions", ``, map[string]any{"sessions": []any{row("<dev-1>", "dev-1", "thread-2", 1), row("<arch>", "arch", "thread-1", 2)}}},
		{"atm_send", `{"identity":"arch","to":"dev-1","message":"ping","summary":"p"}`,
			map[string]any{"from": "arch", "team": "dev", "to": "dev-1"}},
		{"atm_pending_count", `{"identity":"dev-1"}`, map[string]any{"count": 1.0, "identity": "dev-1"}},
		{"atm_read", `{"identity":"dev-1"}`,
			map[string]any{"count": 1.0, "identity": "dev-1", "messages": []any{map[string]any{"from": "arch", "message": "ping"}}}},
		{"atm_pending_count", `{"identity":"dev-1"}`, map[string]any{"count": 0.0, "identity": "dev-1"}},
		{"atm_broadcast", `{"identity":"arch","message":"all hands"}`,
			map[string]any{"from": "arch", "recipients": []any{"team-lead", "dev-1"}, "team": "dev"}},
		{"agent_close", `{"agent_id":"<arch>"}`,
			map[string]any{"agent_id": "<arch>", "already_closed": false, "identity": "arch", "status": "closed", "summary_saved": false, "thread_id": "thread-1"}},
		// This serve's live sessions; with all, its closed ones too.
		{"agent_sessions", ``, map[string]any{"sessions": []any{row("<dev-1>", "dev-1", "thread-2", 1)}}},
		{"agent_sessions", `{"all":true}`, map[string]any{"sessions": []any{row("<dev-1>", "dev-1", "thread-2", 1), closed}}},
		{"agent_list_codex_sessions", ``, map[string]any{"sessions": []any{}}},
	}
	for _, tt := range tests {
		args := strings.ReplaceAll(tt.args, "<arch>", arch)
		got := norm(h.ok(tt.tool, args))
		if diff := cmp.Diff(tt.want, got, byIdentity); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.tool, tt.args, diff)
		}
	}
}

// byIdentity compares lists of sessions in the order of their identities:
// two sessions active in the same second are listed in either order.
var byIdentity = cmpopts.SortSlices(func(a, b any) bool {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB {
		return false
	}
	ia, _ := ma["identity"].(string)
	ib, _ := mb["identity"].(string)
	return ia < ib
})

// volatile are the members whose values change from run to run.
var volatile = map[string]bool{"last_active_at": true, "started_at": true, "finished_at": true, "timestamp": true, "message_id": true}

// normalize drops the volatile members of JSON value v and replaces the
// strings in repl by their placeholders.
func normalize(v any, repl map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !volatile[k] {
				out[k] = normalize(e, repl)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e, repl)
		}
		return out
	case string:
		if p, ok := repl[x]; ok {
			return p
		}
	}
	return v
}

// TestFailedStartTakesNothing: a codex call whose first turn fails before
// Codex gives it a thread (Codex missing) keeps no session and leaves the
// identity free; the next call with the identity works.
func TestFailedStartTakesNothing(t *testing.T) {
	h := newHarness(t)
	_, err := h.call("codex", `{"prompt":"FAIL_START","identity":"arch"}`)
	if err == nil || !strings.Contains(err.Error(), `executable file not found`) || !strings.Contains(err.Error(), `no session was kept: identity "arch" is free`) {
		t.Fatalf("failed start: %v", err)
	}
	if got := h.ok("agent_sessions", "")["sessions"].([]any); len(got) != 0 {
		t.Errorf("sessions after a failed start: %v", got)
	}
	if got := h.ok("codex", `{"prompt":"hello","identity":"arch"}`)["content"]; got != "echo: hello" {
		t.Errorf("the next start: %v", got)
	}
	if n := len(h.env.m.Sessions()); n != 1 {
		t.Errorf("%d sessions in the manager, want 1", n)
	}
}
