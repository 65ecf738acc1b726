package codexchild

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"maps"
	"slices"
)

// A thread's environment and writable roots as Codex takes them: config
// overrides of the thread (the codex tool's "config" on mcp-server,
// thread/start's and thread/resume's "config" on app-server), measured
// with Codex 0.153.4 (mcp-server) and 0.169.0 (app-server) by
// TestThreadEnvReal:
//
//   - ThreadParams.Env becomes shell_environment_policy.set.<NAME>, one
//     dotted key per variable, so that a [shell_environment_policy.set]
//     table of the user's config.toml keeps its other variables; Codex
//     sets them in the environment of every command the thread runs (its
//     exec_command), after its inherit and exclude rules. A caller's own
//     shell_environment_policy object in Config gets them in its "set".
//   - ThreadParams.WritableRoots become sandbox_workspace_write.
//     writable_roots, appended to a list the caller's Config gives there
//     (the key replaces config.toml's list). Codex reads them under the
//     workspace-write sandbox only; they are left out when Options.Sandbox is
//     read-only, so that nothing of ours is ever offered to a read-only
//     thread.
const (
	shellEnvKey      = "shell_environment_policy"
	shellEnvSetKey   = "shell_environment_policy.set"
	writableRootsKey = "sandbox_workspace_write.writable_roots"
)

// withThreadEnv adds p's environment and writable roots to cfg (a copy of
// the caller's config, which it may change).
func withThreadEnv(cfg map[string]any, p backend.ThreadParams) map[string]any {
	if len(p.Env) > 0 {
		if cfg == nil {
			cfg = map[string]any{}
		}
		if pol, ok := cfg[shellEnvKey].(map[string]any); ok {
			pol = maps.Clone(pol)
			set, _ := pol["set"].(map[string]any)
			set = maps.Clone(set)
			if set == nil {
				set = map[string]any{}
			}
			for k, v := range p.Env {
				set[k] = v
			}
			pol["set"] = set
			cfg[shellEnvKey] = pol
		} else if set, ok := cfg[shellEnvSetKey].(map[string]any); ok {
			set = maps.Clone(set)
			for k, v := range p.Env {
				set[k] = v
			}
			cfg[shellEnvSetKey] = set
		} else {
			for k, v := range p.Env {
				cfg[shellEnvSetKey+"."+k] = v
			}
		}
	}
	if len(p.WritableRoots) > 0 && !readOnlyThread(p) {
		if cfg == nil {
			cfg = map[string]any{}
		}
		var roots []any
		if have, ok := cfg[writableRootsKey].([]any); ok {
			roots = slices.Clone(have)
		}
		for _, r := range p.WritableRoots {
			roots = append(roots, r)
		}
		cfg[writableRootsKey] = roots
	}
	return cfg
}

// readOnlyThread reports whether the thread asks for the read-only sandbox, by
// its sandbox parameter or its config's sandbox_mode.
func readOnlyThread(p backend.ThreadParams) bool {
	o := optionsOf(p)
	return o.Sandbox == "read-only" || o.Config["sandbox_mode"] == "read-only"
}
