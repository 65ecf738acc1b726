package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
)

// asked returns the requestState and the single input request of an
// input_required result, or fails.
func asked(t testing.TB, r *mcpconn.ToolResult, err error) (string, string, map[string]any) {
	t.Helper()
	if err != nil {
		t.Fatalf("want input_required, got error %v", err)
	}
	if r.Input == nil {
		t.Fatalf("want input_required, got result %q", r.Text)
	}
	if len(r.Input.Requests) != 1 {
		t.Fatalf("want one input request, got %d", len(r.Input.Requests))
	}
	for k, req := range r.Input.Requests {
		if req.Method != "elicitation/create" {
			t.Fatalf("input request %s is %s", k, req.Method)
		}
		return r.Input.State, k, req.Params.(map[string]any)
	}
	return "", "", nil
}

// ask makes a modern call that must ask for input.
func (h *harness) ask(name, args string, m modern) (string, string, map[string]any) {
	h.t.Helper()
	r, err := h.callModern(name, args, m)
	return asked(h.t, r, err)
}

// TestRoundTripApprovals: a modern client's approvals go through multi
// round-trip results; the retry answers Codex and waits for the same turn,
// never a new one; forged, reused, misdirected and expired requestStates
// answer nothing; cancel is a denial the agent reads.
func TestRoundTripApprovals(t *testing.T) {
	h := newHarness(t, func(c *session.Config) { c.ElicitationTimeout = 300 * time.Millisecond })
	ask := modern{elicitation: true}
	st1, key1, form := h.ask("codex", `{"prompt":"ASK 2","identity":"arch"}`, ask)
	arch := form["agent_id"].(string)
	for k, want := range map[string]any{"identity": "arch", "command": "make 1", "cwd": "/src", "kind": "exec", "mode": "form",
		"approval_id": key1, "message": "[arch] Allow Codex to run `make 1` in `/src`?"} {
		if form[k] != want {
			t.Errorf("form %s = %v, want %v", k, form[k], want)
		}
	}
	if _, ok := form["requestedSchema"]; !ok {
		t.Error("the form has no requestedSchema")
	}

	bad := []struct {
		name, tool, args string
		m                modern
		want             string
	}{
		{"forged", "codex", `{"prompt":"ASK 2","identity":"arch"}`, modern{elicitation: true, state: "rs-forged", responses: `{"` + key1 + `":{"action":"accept"}}`},
			`-32602 requestState "rs-forged" was not issued by this server (or not since it started); call the tool without it`},
		{"another tool", "codex-reply", `{"agent_id":"` + arch + `","prompt":"x"}`, modern{elicitation: true, state: st1, responses: `{"` + key1 + `":{"action":"accept"}}`},
			`-32602 requestState belongs to a codex call, not to codex-reply`},
		{"another session", "codex", `{"agent_id":"codex-other","prompt":"x"}`, modern{elicitation: true, state: st1, responses: `{"` + key1 + `":{"action":"accept"}}`},
			`-32602 requestState belongs to session ` + arch + `, not to codex-other`},
		{"not an elicitation result", "codex", `{"prompt":"ASK 2","identity":"arch"}`, modern{elicitation: true, state: st1, responses: `{"` + key1 + `":{"yes":true}}`},
			`-32602 inputResponses["` + key1 + `"] is not an elicitation result ({"action": accept, decline or cancel})`},
		{"not a tool that asks", "atm_pending_count", `{"identity":"arch"}`, modern{elicitation: true, state: st1},
			`-32602 atm_pending_count never asks for input: call it without requestState`},
	}
	for _, tt := range bad {
		_, err := h.callModern(tt.tool, tt.args, tt.m)
		got := "no error"
		if err != nil {
			got = wireError(err)
		}
		if got != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.name, got, tt.want)
		}
	}

	// A retry without the answer is asked again, with the same state.
	again, key, _ := h.ask("codex", `{"prompt":"ASK 2","identity":"arch"}`, modern{elicitation: true, state: st1})
	if again != st1 || key != key1 {
		t.Errorf("asked again with %s/%s, want %s/%s", again, key, st1, key1)
	}
	// Accept: Codex is answered, the same turn asks the next approval.
	st2, key2, form2 := h.ask("codex", `{"prompt":"ASK 2","identity":"arch"}`,
		modern{elicitation: true, state: st1, responses: `{"` + key1 + `":{"action":"accept","content":{}}}`})
	if st2 == st1 || key2 == key1 || form2["command"] != "make 2" || form2["agent_id"] != arch {
		t.Errorf("second approval: state %s key %s form %v", st2, key2, form2)
	}
	_, err := h.callModern("codex", `{"prompt":"ASK 2","identity":"arch"}`, modern{elicitation: true, state: st1, responses: `{"` + key1 + `":{"action":"accept"}}`})
	if got, want := wireError(err), "-32602 requestState is no longer good: it was answered already; the turn goes on without this call (agent_wait or agent_status tell how it ends)"; got != want {
		t.Errorf("reused state:\n got  %s\n want %s", got, want)
	}
	// Cancel, as headless Claude Code answers: a denial, the turn finishes.
	r, err := h.callModern("codex", `{"prompt":"ASK 2","identity":"arch"}`, modern{elicitation: true, state: st2, responses: `{"` + key2 + `":{"action":"cancel"}}`})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Text, "decisions: approve; deny: "+session.Dismissed; got != want || r.Input != nil {
		t.Errorf("turn result:\n got  %s\n want %s", got, want)
	}
	if n := len(h.ok("agent_sessions", "")["sessions"].([]any)); n != 1 || len(h.fb.Prompts()) != 1 {
		t.Errorf("%d sessions and %d turns after the round trips, want 1 and 1", n, len(h.fb.Prompts()))
	}

	// No retry within the elicitation timeout: a denial; the state is spent.
	st3, _, _ := h.ask("codex-reply", `{"agent_id":"`+arch+`","prompt":"ASK 1"}`, ask)
	waited := h.ok("agent_wait", `{"agent_id":"`+arch+`","timeout_secs":10}`)
	if got := waited["last_result"].(map[string]any)["content"]; !strings.Contains(got.(string), "deny: no answer from the user within 300ms") {
		t.Errorf("after the timeout: %v", got)
	}
	_, err = h.callModern("codex-reply", `{"agent_id":"`+arch+`","prompt":"ASK 1"}`, modern{elicitation: true, state: st3, responses: `{"approval-3":{"action":"accept"}}`})
	if got := wireError(err); !strings.Contains(got, "requestState is no longer good: approval approval-3 was answered otherwise or timed out") {
		t.Errorf("expired state: %s", got)
	}
}

// TestModernAskers: a modern client's background turn queues its
// approvals for agent_respond; one that did not declare elicitation gets
// approval_fallback's answer.
func TestModernAskers(t *testing.T) {
	h := newHarness(t)
	arch := h.ok("codex", `{"prompt":"hi","identity":"arch"}`)["agent_id"].(string)
	if _, err := h.callModern("codex-reply", `{"agent_id":"`+arch+`","prompt":"ASK 1","background":true}`, modern{elicitation: true}); err != nil {
		t.Fatal(err)
	}
	var pending []any
	poll.Until(t, "the approval is listed", func() bool {
		pending, _ = h.ok("agent_status", `{"agent_id":"`+arch+`"}`)["pending_approvals"].([]any)
		return len(pending) == 1
	})
	h.ok("agent_respond", `{"agent_id":"`+arch+`","answer":"approve"}`)
	waited := h.ok("agent_wait", `{"agent_id":"`+arch+`","timeout_secs":10}`)
	if got := waited["last_result"].(map[string]any)["content"]; got != "decisions: approve" {
		t.Errorf("background turn: %v", got)
	}

	r, err := h.callModern("codex-reply", `{"agent_id":"`+arch+`","prompt":"ASK 1"}`, modern{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Text, "decisions: deny: denied automatically: the MCP client cannot answer approval requests") {
		t.Errorf("without elicitation: %s", r.Text)
	}
	if diff := cmp.Diff(1, len(h.ok("agent_sessions", "")["sessions"].([]any))); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
}
