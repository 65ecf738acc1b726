package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// TestStructuredOutput: output_schema on a kind that cannot constrain its
// agent (the fake is no StructuredOutputter) is told in the prompt and the
// answer validated: JSON of the schema is structuredContent.output, an
// answer that is not is an error result with why and the answer as it
// was; a schema that cannot be checked against is refused before any
// turn.
func TestStructuredOutput(t *testing.T) {
	h := newHarness(t)
	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	got := h.ok("codex", `{"prompt":"ANSWER={\"n\": 7}","identity":"arch","output_schema":`+schema+`}`)
	if diff := cmp.Diff(map[string]any{"n": 7.0}, got["output"]); diff != "" || got["output_how"] != "prompted" {
		t.Errorf("output = %v (how %v), want {n: 7} prompted (-want +got):\n%s", got["output"], got["output_how"], diff)
	}
	if p := h.fb.Prompts()[len(h.fb.Prompts())-1]; !strings.Contains(p, "<output-schema>") || !strings.Contains(p, `"required":["n"]`) {
		t.Errorf("prompt %q does not ask for the schema", p)
	}
	arch := got["agent_id"].(string)

	r, err := h.call("codex-reply", `{"agent_id":"`+arch+`","prompt":"ANSWER=seven","output_schema":`+schema+`}`)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Structured.(map[string]any)
	if !r.IsError || m["output"] != nil || !strings.Contains(m["output_error"].(string), "not JSON") || !strings.HasSuffix(r.Text, "The agent's answer was:\nseven") {
		t.Errorf("mismatch: isError %v, structured %v, text %q", r.IsError, m, r.Text)
	}
	d := h.ok("agent_status", `{"agent_id":"`+arch+`"}`)
	if last := d["last_result"].(map[string]any); !strings.Contains(last["output_error"].(string), "not JSON") {
		t.Errorf("agent_status last_result = %v, want its output_error", last)
	}
	// Without a schema the answer is not checked.
	if got := h.ok("codex-reply", `{"agent_id":"`+arch+`","prompt":"ANSWER=seven"}`); got["output_how"] != nil || got["content"] != "seven" {
		t.Errorf("a reply without a schema = %v", got)
	}
}

// TestFork: agent_fork of a session whose kind cannot fork a thread (the
// fake is no Forker) makes a new session, with its own agent_id and
// identity, whose first turn is told the source's messages and last
// result; the registry records the parent and how.
func TestFork(t *testing.T) {
	h := newHarness(t)
	arch := h.ok("codex", `{"prompt":"ANSWER=the plan is ready","identity":"arch"}`)["agent_id"].(string)
	idle := h.ok("agent_fork", `{"agent_id":"`+arch+`","identity":"dev-1"}`)
	fork := idle["agent_id"].(string)
	want := map[string]any{"agent_id": arch, "thread": "thread-1", "how": registry.ForkTranscript}
	if diff := cmp.Diff(want, asJSON(t, idle["forked_from"])); diff != "" || fork == arch || idle["status"] != "idle" || idle["identity"] != "dev-1" {
		t.Errorf("agent_fork without a prompt = %v (-want +got forked_from):\n%s", idle, diff)
	}
	n := len(h.fb.Prompts())
	got := h.ok("agent_reply", `{"agent_id":"`+fork+`","prompt":"go on"}`)
	if len(h.fb.Prompts()) != n+1 || got["threadId"] == "thread-1" {
		t.Fatalf("the fork's first turn = %v", got)
	}
	p := h.fb.Prompts()[n]
	if !strings.Contains(p, "You are a fork of session "+arch) || !strings.Contains(p, "the plan is ready") || !strings.HasSuffix(p, "go on") {
		t.Errorf("the fork's first prompt %q is not told the source's result", p)
	}
	if p := h.ok("codex-reply", `{"agent_id":"`+fork+`","prompt":"again"}`); strings.Contains(h.fb.Prompts()[len(h.fb.Prompts())-1], "You are a fork") {
		t.Errorf("the fork's second turn is told again: %v", p)
	}
	st := h.ok("agent_status", `{"agent_id":"`+fork+`"}`)
	if diff := cmp.Diff(want, asJSON(t, st["forked_from"])); diff != "" {
		t.Errorf("agent_status forked_from (-want +got):\n%s", diff)
	}
	// With a prompt, the fork's first turn runs at once.
	got = h.ok("agent_fork", `{"agent_id":"`+arch+`","identity":"team-lead","prompt":"ANSWER=forked and done"}`)
	if got["content"] != "forked and done" || !strings.Contains(h.fb.Prompts()[len(h.fb.Prompts())-1], "You are a fork") {
		t.Errorf("agent_fork with a prompt = %v", got)
	}
}

// asJSON is v as generic JSON.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
