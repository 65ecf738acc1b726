package agentmcp

import (
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acpbackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// agentBackends builds one ACP backend (acpbackend.New) per enabled
// agent kind of the configuration: a preset or an agent of
// [plugins.atm-agent-mcp.agents.<name>], keyed by its name, beside the
// Codex backend of the default kind (newBackend). Nothing is started
// here: an agent's process starts with the first turn of a session of its
// kind. Every agent runs through this program's guard, as Codex does, so
// that nothing of it outlives serve.
func agentBackends(cfg *config.Config, guard []string, logger *slog.Logger) map[string]backend.Backend {
	out := map[string]backend.Backend{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
		a := cfg.Agents[name]
		if !a.Enabled {
			continue
		}
		opts := make([]acp.ConfigOption, 0, len(a.ConfigOptions))
		for _, o := range a.ConfigOptions {
			opts = append(opts, acp.ConfigOption{ID: o.ID, Value: o.Value})
		}
		out[name] = acpbackend.New(acpbackend.Config{
			Name: name, Command: a.Command, Args: a.Args, Env: append(a.EnvList(), parentServeEnv(cfg)),
			Mode: a.Mode, ConfigOptions: opts, Resume: a.Resume, ToolTransport: a.MCPTransport, Guard: guard,
			InitTimeout: min(cfg.HandshakeTimeout, cfg.RequestTimeout), TurnTimeout: cfg.RequestTimeout,
			Logger: logger.With("component", "agent"),
		})
	}
	return out
}

// agentCheck returns agent_start's check of an agent kind: the default
// kind (Codex, whose child serve supervises) always passes; another kind
// must be known (a preset or a configured agent), switched on, and its
// program installed. Each failure is INVALID_PARAMS (-32602) saying what
// to do, so that nothing is recorded for a session that cannot start.
func agentCheck(cfg *config.Config) func(kind string) error {
	return func(kind string) error {
		if kind == registry.DefaultKind {
			return nil
		}
		a, err := cfg.Agent(kind)
		if err != nil {
			return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "agent", "agent": kind}, "%v", err)
		}
		if _, err := exec.LookPath(a.Command); err != nil {
			fix := fmt.Sprintf("install it (%s), or set command in [plugins.atm-agent-mcp.agents.%s]", installHint(a), kind)
			where := fmt.Sprintf("%q is not on PATH", a.Command)
			if strings.ContainsRune(a.Command, filepath.Separator) {
				where = fmt.Sprintf("%s is not an executable file", a.Command)
			}
			return proxyerr.New(proxyerr.ErrInvalidParams,
				map[string]any{"argument": "agent", "agent": kind, "command": a.Command, "install": a.Install},
				"agent %q is not installed: %s; %s; atm-agent-mcp doctor checks every agent", kind, where, fix)
		}
		return nil
	}
}

// installHint is how to install an agent's program: its preset's npm
// command, else the program itself.
func installHint(a config.AgentConfig) string {
	if a.Install != "" {
		return a.Install
	}
	return a.Command
}
