package tools

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolsMeta: the tools a lead needs at once load without ToolSearch in
// Claude Code (anthropic/alwaysLoad), the tools with long results may
// return more than its default 100,000 characters, and the tools-only
// server that Codex starts lists no such hints.
func TestToolsMeta(t *testing.T) {
	var defs []struct {
		Name string         `json:"name"`
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(Definitions, &defs); err != nil {
		t.Fatal(err)
	}
	var always []string
	sizes := map[string]any{}
	for _, d := range defs {
		for k, v := range d.Meta {
			switch k {
			case "anthropic/alwaysLoad":
				if v == true {
					always = append(always, d.Name)
				}
			case "anthropic/maxResultSizeChars":
				sizes[d.Name] = v
			default:
				t.Errorf("%s: unknown _meta key %s", d.Name, k)
			}
		}
	}
	if diff := cmp.Diff([]string{"codex", "codex-reply", "agent_status", "agent_wait"}, always); diff != "" {
		t.Errorf("alwaysLoad (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"agent_status": 200000.0, "atm_read": 200000.0, "agent_diff": 200000.0}, sizes); diff != "" {
		t.Errorf("maxResultSizeChars (-want +got):\n%s", diff)
	}
	b, err := toolsOnlyList("arch")
	if err != nil {
		t.Fatal(err)
	}
	var only struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(b, &only); err != nil {
		t.Fatal(err)
	}
	for _, tool := range only.Tools {
		if _, ok := tool["_meta"]; ok {
			t.Errorf("the tools-only server lists _meta for %v", tool["name"])
		}
	}
}

// TestInstructionsNameRealTools: every tool the instructions name (in
// backquotes) exists, and they name the ones a lead starts with.
func TestInstructionsNameRealTools(t *testing.T) {
	var named []string
	for _, m := range regexp.MustCompile("`([a-z_-]+)`").FindAllStringSubmatch(Instructions, -1) {
		if !slices.Contains(names, m[1]) {
			t.Errorf("the instructions name %q, which is no tool", m[1])
		}
		named = append(named, m[1])
	}
	for _, want := range []string{"codex", "codex-reply", "agent_wait", "agent_status", "agent_respond", "atm_send", "agent_close", "agent_diff", "agent_merge", "agent_fork"} {
		if !slices.Contains(named, want) {
			t.Errorf("the instructions do not name %s", want)
		}
	}
}
