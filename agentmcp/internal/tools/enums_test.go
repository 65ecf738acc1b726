package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
)

// TestSchemaEnums: the enums checked are the ones tools.json declares, and
// they are the values the configuration accepts for the same settings.
func TestSchemaEnums(t *testing.T) {
	got, err := schemaEnums(Definitions)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string][]string{
		"codex":       {"approval-policy": config.ApprovalPolicies, "sandbox": config.Sandboxes, "isolation": config.Isolations},
		"agent_start": {"isolation": config.Isolations},
		"agent_fork":  {"isolation": config.Isolations},
		// The strategies are workspace's; the others are agentMerge's words.
		"agent_merge": {"strategy": {string(workspace.Squash), string(workspace.MergeCommit), string(workspace.Rebase)},
			"on_conflict": {"report", "mail"}, "to": {"lead", "branch"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("enums of tools.json (-want +got):\n%s", diff)
	}
	for key, arg := range configEnums {
		if got["codex"][arg] == nil {
			t.Errorf("config key %s mirrors codex argument %q, which has no enum", key, arg)
		}
	}
	if _, err := schemaEnums([]byte(`[{"name":"x","inputSchema":{"properties":{"n":{"enum":[1,2]}}}}]`)); err == nil ||
		!strings.Contains(err.Error(), "x.n: enum value 1 is not a string") {
		t.Errorf("a numeric enum: err = %v, want one naming x.n", err)
	}
}

// TestEveryEnumChecked: for every enumerated argument of every tool, a
// value outside the enum is refused with -32602 naming the allowed values,
// before anything reaches Codex; the config keys that mirror one are
// checked too.
func TestEveryEnumChecked(t *testing.T) {
	h := newHarness(t)
	type call struct{ tool, args, want string }
	var calls []call
	for _, tool := range slices.Sorted(maps.Keys(enums)) {
		for _, arg := range slices.Sorted(maps.Keys(enums[tool])) {
			calls = append(calls, call{tool, fmt.Sprintf(`{"prompt":"x",%q:"bogus-mode"}`, arg),
				fmt.Sprintf(`-32602 argument %q must be one of: %s (got "bogus-mode")`, arg, strings.Join(enums[tool][arg], ", "))})
			calls = append(calls, call{tool, fmt.Sprintf(`{"prompt":"x",%q:7}`, arg), fmt.Sprintf(`-32602 argument %q must be a string`, arg)})
		}
	}
	calls = append(calls,
		call{"codex", `{"prompt":"x","config":{"sandbox_mode":"wide-open"}}`,
			`-32602 config key "sandbox_mode" must be one of: read-only, workspace-write, danger-full-access (got "wide-open")`},
		call{"codex", `{"prompt":"x","config":{"approval_policy":"sometimes"}}`,
			`-32602 config key "approval_policy" must be one of: untrusted, on-failure, on-request, never (got "sometimes")`},
		call{"codex", `{"prompt":"x","config":{"approval_policy":true}}`,
			`-32602 config key "approval_policy" must be a string, one of: untrusted, on-failure, on-request, never`},
	)
	if len(calls) < 4 {
		t.Fatalf("only %d enum calls: tools.json lost its enums", len(calls))
	}
	for _, c := range calls {
		_, err := h.call(c.tool, c.args)
		got := "no error"
		if err != nil {
			got = wireError(err)
		}
		if got != c.want {
			t.Errorf("%s %s:\n got  %s\n want %s", c.tool, c.args, got, c.want)
		}
	}
	if len(h.fb.Prompts()) != 0 {
		t.Errorf("%d turns reached Codex", len(h.fb.Prompts()))
	}
	// Values inside the enums pass.
	h.ok("codex", `{"prompt":"x","sandbox":"workspace-write","approval-policy":"never","config":{"sandbox_mode":"read-only"}}`)
}

// TestConfigDescriptionNamesReadOnlyKeys: the codex tool's config
// description lists exactly the keys a read-only session accepts.
func TestConfigDescriptionNamesReadOnlyKeys(t *testing.T) {
	var defs []struct {
		Name        string
		InputSchema struct {
			Properties map[string]struct{ Description string }
		}
	}
	if err := json.Unmarshal(Definitions, &defs); err != nil {
		t.Fatal(err)
	}
	desc := defs[0].InputSchema.Properties["config"].Description
	for _, k := range session.ReadOnlyConfigKeys {
		if !strings.Contains(desc, k) {
			t.Errorf("the config description does not name %s: %s", k, desc)
		}
	}
}
