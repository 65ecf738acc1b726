package session

import (
	"maps"
	"slices"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// The operator's sandbox policy (docs/configuration.md, "Policy"): a
// session whose sandbox as the operator configured it — the instance's
// sandbox after the session's role preset — is read-only is held
// read-only. --readonly makes every one read-only. A call cannot widen it:
// Manager.Create refuses settings that ask for more (CheckSettings), and
// threadParams clamps what reaches a sandboxed backend
// (backend.Sandboxed) when every configured sandbox is read-only
// (holdPolicy), so that no path to thread parameters (a first turn, a
// thread started again after a restart or a resume, an adopted thread, an
// auto-mail turn) can forget it.

// ReadOnly is the sandbox the policy holds.
const ReadOnly = "read-only"

// ReadOnlyConfigKeys are the config overrides (the codex tool's config
// argument) a call may give to a session held read-only: they
// shape what the model says, never what the agent may touch. Every other
// key is refused there — sandbox_mode, sandbox_workspace_write.*, profile
// and profiles can widen the sandbox, and keys such as mcp_servers, notify
// or shell_environment_policy run or reach things outside it.
var ReadOnlyConfigKeys = []string{
	"compact_prompt", "hide_agent_reasoning", "model", "model_auto_compact_token_limit", "model_context_window",
	"model_reasoning_effort", "model_reasoning_summary", "model_verbosity", "show_raw_agent_reasoning",
}

// policyNote says where a read-only policy comes from, for errors.
const policyNote = `the operator holds this session read-only (--readonly, or sandbox = "read-only" in the configuration or the role preset)`

// HeldReadOnly reports whether sessions of role (of any kind) are held
// read-only by the operator's policy: the configured sandbox after the
// role preset is read-only.
func (c *Catalogue) HeldReadOnly(role string) bool {
	st, _ := c.resolved(role)
	return st.Sandbox == ReadOnly
}

// CheckSettings checks the settings of a session of role against the
// operator's policy: for a session held read-only, a sandbox other than
// read-only, a profile (which can set sandbox_mode) and config overrides
// outside ReadOnlyConfigKeys fail with INVALID_PARAMS (-32602) naming the
// argument, the policy and what is allowed. Fields a caller leaves empty
// pass.
func (c *Catalogue) CheckSettings(role string, st ThreadSettings) error {
	if !c.HeldReadOnly(role) {
		return nil
	}
	return policyViolation(st)
}

// policyViolation is the first way st asks for more than read-only, or nil.
func policyViolation(st ThreadSettings) error {
	if st.Sandbox != "" && st.Sandbox != ReadOnly {
		return proxyerr.New(proxyerr.ErrInvalidParams,
			map[string]any{"argument": "sandbox", "policy": ReadOnly, "allowed": []string{ReadOnly}},
			"sandbox %q is refused: %s; give sandbox \"read-only\" or leave it out", st.Sandbox, policyNote)
	}
	if st.Profile != "" {
		return proxyerr.New(proxyerr.ErrInvalidParams,
			map[string]any{"argument": "profile", "policy": ReadOnly},
			"profile %q is refused: %s, and a Codex profile can set another sandbox; leave profile out", st.Profile, policyNote)
	}
	for _, k := range slices.Sorted(maps.Keys(st.Config)) {
		if !readOnlyConfigKey(k) {
			return proxyerr.New(proxyerr.ErrInvalidParams,
				map[string]any{"argument": "config", "key": k, "policy": ReadOnly, "allowed": ReadOnlyConfigKeys},
				"config key %q is refused: %s; config may then set only %s", k, policyNote, strings.Join(ReadOnlyConfigKeys, ", "))
		}
	}
	return nil
}

// readOnlyConfigKey reports whether a config override key (nested or
// dotted: its first segment counts) may be given under the read-only
// policy.
func readOnlyConfigKey(k string) bool {
	first, _, _ := strings.Cut(k, ".")
	return slices.Contains(ReadOnlyConfigKeys, first)
}

// allReadOnly reports whether every session is held read-only: the
// instance's sandbox and every role preset's are read-only, as --readonly
// makes them.
func (c *Config) allReadOnly() bool {
	if c.Defaults.Sandbox != ReadOnly {
		return false
	}
	for _, r := range c.Roles {
		if r.Sandbox != "" && r.Sandbox != ReadOnly {
			return false
		}
	}
	return true
}

// holdPolicy returns st as it may become thread parameters: when every
// session is held read-only, the sandbox is read-only, no profile is sent
// and config keeps only ReadOnlyConfigKeys. CheckSettings refused anything
// else when the session was created, so this changes nothing unless a path
// forgot; it then logs what it removed.
func (c *Config) holdPolicy(st ThreadSettings) ThreadSettings {
	if !c.allReadOnly() || st.Sandbox == ReadOnly && policyViolation(st) == nil {
		return st
	}
	var removed []string
	if st.Sandbox != ReadOnly {
		if st.Sandbox != "" {
			removed = append(removed, "sandbox="+st.Sandbox)
		}
		st.Sandbox = ReadOnly
	}
	if st.Profile != "" {
		removed = append(removed, "profile="+st.Profile)
		st.Profile = ""
	}
	var cfg map[string]any
	for _, k := range slices.Sorted(maps.Keys(st.Config)) {
		if !readOnlyConfigKey(k) {
			removed = append(removed, "config."+k)
			continue
		}
		if cfg == nil {
			cfg = map[string]any{}
		}
		cfg[k] = st.Config[k]
	}
	st.Config = cfg
	if len(removed) == 0 {
		return st
	}
	c.Logger.Warn("read-only policy: settings clamped before they reached the agent", "removed", strings.Join(removed, ", "))
	return st
}

// readOnlyDenial is what an agent is told when approval_fallback =
// "approve" would have approved a request of a session held read-only.
const readOnlyDenial = "denied automatically: the operator holds this session read-only (--readonly, or sandbox = \"read-only\"), " +
	"so approval_fallback = \"approve\" does not apply to it; work within the read-only sandbox."

// heldReadOnlyTurn reports whether an approval of s's turn (rec its
// record; nil s: a turn without a session) falls under the read-only
// policy.
func (c *Catalogue) heldReadOnlyTurn(s *Session, rec registry.Session) bool {
	if s == nil {
		return c.cfg.allReadOnly()
	}
	return c.HeldReadOnly(rec.Role)
}

// An agent whose backend is not Sandboxed has no sandbox for the policy to
// hold: an ACP agent runs with the rights of serve. For a session of such
// a kind held read-only (--readonly, or a read-only sandbox in the
// configuration or the session's role preset), the approval bridge denies
// without asking every request to run a command or to change files — an
// ACP tool call of kind execute (an exec approval), edit, delete or move
// (a patch approval) — with readOnlyAgentDenial; other tool calls (read,
// fetch, an MCP tool: ApprovalTool) are asked as usual, and
// approval_fallback = "approve" never approves any of them. What an agent
// does without asking is its own mode's: the ACP backend sets each agent's
// mode so that it asks. Settings a kind does not take (sandbox, config,
// profile, …) are refused for it whatever the policy (Catalogue.check).

// readOnlyAgentDenial is what an agent without a sandbox is told when the
// read-only policy refuses its request.
const readOnlyAgentDenial = "denied automatically: the operator holds this session read-only (--readonly, or sandbox = \"read-only\"), " +
	"so commands and file changes are refused; read and report instead."

// deniedReadOnly reports whether an approval of a session on b is one the
// read-only policy refuses without asking, when the session is held
// read-only: a command or a file change of an agent whose backend is not
// Sandboxed (a sandbox holds it otherwise).
func deniedReadOnly(b Backend, a *backend.Approval) bool {
	return !backend.IsSandboxed(b) && (a.Kind == backend.ApprovalExec || a.Kind == backend.ApprovalPatch)
}
