package codexchild

import (
	"maps"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// codexConfig returns the config overrides a Codex thread is started
// with: the Config of p's Options, with each of p.ToolServers as an
// mcp_servers entry whose tools are approved and which the thread requires
// (Codex fails the thread rather than run it without the team-mail tools),
// and with the thread's environment and writable roots (threadenv.go). An
// mcp_servers map in that Config keeps its other servers; a tool server
// replaces one of the same name. The result is a new map (nil when empty);
// the Config is never changed.
func codexConfig(p backend.ThreadParams) map[string]any {
	cfg := maps.Clone(optionsOf(p).Config)
	cfg = withToolServers(cfg, p.ToolServers)
	cfg = withThreadEnv(cfg, p)
	if len(cfg) == 0 {
		return nil
	}
	return cfg
}

// withToolServers adds the tool servers to cfg (a copy of the caller's).
func withToolServers(cfg map[string]any, tss []backend.ToolServer) map[string]any {
	if len(tss) == 0 {
		return cfg
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	servers := map[string]any{}
	if existing, ok := cfg["mcp_servers"].(map[string]any); ok {
		maps.Copy(servers, existing)
	}
	for _, ts := range tss {
		env := make(map[string]any, len(ts.Env))
		for k, v := range ts.Env {
			env[k] = v
		}
		servers[ts.Name] = map[string]any{
			"command":                     ts.Command,
			"args":                        append([]string{}, ts.Args...),
			"env":                         env,
			"default_tools_approval_mode": "approve",
			"required":                    true,
		}
	}
	cfg["mcp_servers"] = servers
	return cfg
}
