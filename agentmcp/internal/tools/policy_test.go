package tools

import (
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/google/go-cmp/cmp"
)

// TestReadOnlyPolicy: under a read-only operator sandbox no call widens a
// session — not by sandbox, profile or config (plain, nested or dotted
// keys), not on a resume — and each refusal names the policy; a role whose
// preset is wider is not held; what reaches Codex is read-only.
func TestReadOnlyPolicy(t *testing.T) {
	h := newHarness(t, func(c *session.Config) {
		c.Defaults = session.ThreadDefaults{Sandbox: "read-only", ApprovalPolicy: "on-request"}
		c.Roles = map[string]session.ThreadDefaults{"builder": {Sandbox: "workspace-write"}}
	})
	const policy = `the operator holds this session read-only (--readonly, or sandbox = "read-only" in the configuration or the role preset)`
	const keys = "compact_prompt, hide_agent_reasoning, model, model_auto_compact_token_limit, model_context_window, model_reasoning_effort, model_reasoning_summary, model_verbosity, show_raw_agent_reasoning"
	reader := h.ok("codex", `{"prompt":"look","identity":"arch","config":{"model_reasoning_effort":"low"}}`)["agent_id"].(string)
	refused := []struct{ args, want string }{
		{`{"prompt":"x","sandbox":"danger-full-access"}`, `-32602 sandbox "danger-full-access" is refused: ` + policy + `; give sandbox "read-only" or leave it out`},
		{`{"prompt":"x","sandbox":"workspace-write"}`, `-32602 sandbox "workspace-write" is refused: ` + policy + `; give sandbox "read-only" or leave it out`},
		{`{"prompt":"x","profile":"wide"}`, `-32602 profile "wide" is refused: ` + policy + `, and a Codex profile can set another sandbox; leave profile out`},
		{`{"prompt":"x","config":{"sandbox_mode":"danger-full-access"}}`, `-32602 config key "sandbox_mode" is refused: ` + policy + `; config may then set only ` + keys},
		{`{"prompt":"x","config":{"sandbox_workspace_write":{"network_access":true}}}`, `-32602 config key "sandbox_workspace_write" is refused: ` + policy + `; config may then set only ` + keys},
		{`{"prompt":"x","config":{"sandbox_workspace_write.network_access":true}}`, `-32602 config key "sandbox_workspace_write.network_access" is refused: ` + policy + `; config may then set only ` + keys},
		{`{"prompt":"x","config":{"profile":"wide"}}`, `-32602 config key "profile" is refused: ` + policy + `; config may then set only ` + keys},
		{`{"prompt":"x","config":{"mcp_servers":{"x":{"command":"rm"}}}}`, `-32602 config key "mcp_servers" is refused: ` + policy + `; config may then set only ` + keys},
		{`{"prompt":"x","config":{"model_reasoning_effort.x":1,"notify":["sh"]}}`, `-32602 config key "notify" is refused: ` + policy + `; config may then set only ` + keys},
		{`{"agent_id":"` + reader + `","prompt":"go on","sandbox":"danger-full-access"}`, `-32602 sandbox "danger-full-access" is refused: ` + policy + `; give sandbox "read-only" or leave it out`},
		{`{"agent_id":"` + reader + `","prompt":"go on","config":{"sandbox_mode":"workspace-write"}}`, `-32602 config key "sandbox_mode" is refused: ` + policy + `; config may then set only ` + keys},
	}
	for _, tt := range refused {
		_, err := h.call("codex", tt.args)
		got := "no error"
		if err != nil {
			got = wireError(err)
		}
		if got != tt.want {
			t.Errorf("codex %s:\n got  %s\n want %s", tt.args, got, tt.want)
		}
	}
	if _, err := h.call("codex-reply", `{"agent_id":"`+reader+`","prompt":"x","sandbox":"danger-full-access"}`); err == nil {
		t.Error("codex-reply took a sandbox")
	}
	h.ok("codex", `{"prompt":"ro","identity":"dev-1","sandbox":"read-only"}`)
	h.ok("codex", `{"prompt":"build","identity":"team-lead","role":"builder","sandbox":"danger-full-access"}`)

	var got []string
	for _, r := range h.fb.Requests() {
		o, _ := r.Params.Options.(codexchild.Options)
		got = append(got, o.Sandbox)
	}
	if diff := cmp.Diff([]string{"read-only", "read-only", "danger-full-access"}, got); diff != "" {
		t.Errorf("sandboxes that reached Codex (-want +got):\n%s", diff)
	}
	if o, _ := h.fb.Requests()[0].Params.Options.(codexchild.Options); o.Config["model_reasoning_effort"] != "low" || o.Config["sandbox_mode"] != nil {
		t.Errorf("config of the first thread: %v", o.Config)
	}
}
