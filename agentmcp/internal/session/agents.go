package session

import (
	"maps"
	"slices"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// One backend per agent kind. A session's kind is its record's Backend
// (registry.Session.Backend: "codex" for a record that names none), set
// when the session is created (CreateRequest.Agent) and kept in the
// registry, so that a session adopted after serve restarts runs on the
// backend of its own kind. Every use of a session's backend — its turns,
// an interrupt, the summary asked on close and shutdown, the check that
// its agent is up — goes through backendOf with the session's record; no
// code path holds a session's backend. Config.Backend is Codex's
// ("codex"); Config.Agents are the others'.
//
// What only Codex has stays with Codex sessions: the availability check
// (a Codex that is down, a crash loop: recovery.go) is asked of the
// session's own backend, which only the proxy's Codex child answers;
// AfterRestart continues only Codex sessions; the Codex-only settings
// (CodexSettings) are refused for other kinds and never sent to them; the
// sandbox policy holds Codex's sandbox (policy.go says what it does for
// other kinds).

// KindCodex is the agent kind of Codex sessions (Config.Backend).
const KindCodex = registry.BackendCodex

// agentConfigHint says how an agent kind is configured, for errors.
const agentConfigHint = "configure it under [plugins.atm-agent-mcp.agents.<name>] (or use a built-in preset) and restart serve"

// kindOf is the agent kind of a session's record.
func kindOf(rec registry.Session) string {
	return firstNonEmpty(rec.Backend, KindCodex)
}

// isCodex reports whether a record is a Codex session's.
func isCodex(rec registry.Session) bool { return kindOf(rec) == KindCodex }

// Agents returns the agent kinds this Manager runs: "codex" first, then
// the configured ones by name.
func (m *Manager) Agents() []string {
	return append([]string{KindCodex}, slices.Sorted(maps.Keys(m.cfg.Agents))...)
}

// backendFor returns the backend of agent kind ("" is Codex), or nil when
// none is configured.
func (m *Manager) backendFor(kind string) Backend {
	if kind == "" || kind == KindCodex {
		return m.cfg.Backend
	}
	return m.cfg.Agents[kind]
}

// backendOf returns the backend of the session rec is the record of. A
// kind that is not configured (a session of another serve's
// configuration, adopted from the registry) fails with INTERNAL_ERROR
// (-32603) naming the kind and how to configure it.
func (m *Manager) backendOf(rec registry.Session) (Backend, error) {
	kind := kindOf(rec)
	if b := m.backendFor(kind); b != nil {
		return b, nil
	}
	return nil, proxyerr.New(proxyerr.ErrInternal,
		map[string]any{"agent_id": rec.AgentID, "agent": kind, "agents": m.Agents()},
		"session %s runs agent %q, which this serve does not have (agents: %s); %s",
		rec.AgentID, kind, strings.Join(m.Agents(), ", "), strings.Replace(agentConfigHint, "<name>", kind, 1))
}

// checkAgent checks the agent kind a new session asks for: Codex, or one
// of Config.Agents; else INVALID_PARAMS (-32602) naming it, the kinds
// there are and how to configure it.
func (m *Manager) checkAgent(kind string) error {
	if m.backendFor(kind) != nil {
		return nil
	}
	return proxyerr.New(proxyerr.ErrInvalidParams,
		map[string]any{"argument": "agent", "agent": kind, "agents": m.Agents()},
		"agent %q is not configured (agents: %s); %s",
		kind, strings.Join(m.Agents(), ", "), strings.Replace(agentConfigHint, "<name>", kind, 1))
}

// CodexSettings are the names of the settings only Codex understands (the
// codex tool's arguments): a session of another kind refuses them.
var CodexSettings = []string{"approval-policy", "compact-prompt", "config", "profile", "reasoning-effort", "sandbox"}

// CheckAgentSettings checks the settings asked for a session of agent kind
// ("" is Codex): another kind refuses the Codex-only ones (CodexSettings)
// with INVALID_PARAMS (-32602) naming the argument and the kind. Fields a
// caller leaves empty pass; Codex's settings pass (CheckSettings holds
// them to the operator's policy).
func (m *Manager) CheckAgentSettings(kind string, st ThreadSettings) error {
	if kind == "" || kind == KindCodex {
		return nil
	}
	for _, f := range []struct{ name, value string }{
		{"approval-policy", st.ApprovalPolicy}, {"compact-prompt", st.CompactPrompt}, {"profile", st.Profile},
		{"reasoning-effort", st.ReasoningEffort}, {"sandbox", st.Sandbox},
	} {
		if f.value != "" {
			return codexOnly(kind, f.name)
		}
	}
	if len(st.Config) > 0 {
		return codexOnly(kind, "config")
	}
	return nil
}

func codexOnly(kind, arg string) error {
	return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": arg, "agent": kind, "codex_only": CodexSettings},
		"%s is a Codex setting: agent %q does not take it (Codex-only: %s); leave it out", arg, kind, strings.Join(CodexSettings, ", "))
}

// agentName is how an approval question names the agent of a session of
// kind: "Codex" for Codex (and a turn without a session), else the kind
// ("claude").
func agentName(kind string) string {
	if kind == "" || kind == KindCodex {
		return "Codex"
	}
	return kind
}
