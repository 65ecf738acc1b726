package session

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// One backend per agent kind, in a map by kind (Config.Backends). A
// session's kind is its record's (registry.Session.Kind: the default kind,
// registry.DefaultKind, for a record that names none), set when the
// session is created (CreateRequest.Agent) and kept in the registry, so
// that a session adopted after serve restarts runs on the backend of its
// own kind. Every use of a session's backend — its turns, an interrupt,
// the summary asked on close and shutdown, the check that its agent is up
// — goes through the Catalogue with the session's record; no code path
// holds a session's backend.
//
// What a kind can do is asked of its backend (package codexchild/backend's
// capabilities), never inferred from its name: whether it is down
// (Availability, recovery.go), whether its mail waits (MailPauser), which
// settings of its own it takes (Configurable: a session of a kind that
// does not take one refuses it, and its thread parameters carry the
// values as the backend's own Options), whether a sandbox holds it
// (Sandboxed: policy.go), whether one child runs every session and is
// restarted as a whole (WholeRestarter: the errors of its turns, turn.go;
// AfterRestart continues the sessions of the backend that was restarted),
// and its name in questions (Named). The configured thread defaults and
// role presets (Config.Defaults, Config.Roles) are the default kind's
// settings, as serve's configuration is; other kinds are configured in
// sections of their own, outside this package.

// agentConfigHint says how an agent kind is configured, for errors.
const agentConfigHint = "configure it under [plugins.atm-agent-mcp.agents.<name>] (or use a built-in preset) and restart serve"

// Catalogue answers what the agent kinds of a Manager are and take, and
// where a new session may run: the kinds there are, their settings and
// the checks of a new session's, from the kinds' backends and the
// configuration; the hosts, a new session's directory (ResolveCwd) and
// its git facts (hosts.go). It reads configuration only (and git, and the
// hosts, through the configured Git and Hosts); its methods are safe for
// concurrent use.
type Catalogue struct {
	cfg *Config
}

// Catalogue returns the Manager's catalogue of agent kinds.
func (m *Manager) Catalogue() *Catalogue { return m.cat }

// Default returns the kind of a session created without one, and of a
// turn no session has (registry.DefaultKind).
func (c *Catalogue) Default() string { return registry.DefaultKind }

// Agents returns the agent kinds there are: the default kind first, then
// the others by name.
func (c *Catalogue) Agents() []string {
	others := slices.Sorted(maps.Keys(c.cfg.Backends))
	others = slices.DeleteFunc(others, func(k string) bool { return k == c.Default() })
	return append([]string{c.Default()}, others...)
}

// Name is how questions and messages call the agents of kind ("" is the
// default kind): the backend's name for them (backend.Named, "Codex"),
// else the kind ("claude").
func (c *Catalogue) Name(kind string) string {
	kind = c.kind(kind)
	return backend.NameOf(c.backend(kind), kind)
}

// Own returns the settings of its own that the backend of kind takes
// (backend.Configurable), nil when it takes none.
func (c *Catalogue) Own(kind string) []string {
	return backend.SettingsOf(c.backend(c.kind(kind)))
}

// Settings returns every setting some kind takes of its own, sorted: what
// a call that is not one kind's (agent_start) cannot take.
func (c *Catalogue) Settings() []string {
	var all []string
	for _, b := range c.cfg.Backends {
		for _, name := range backend.SettingsOf(b) {
			if !slices.Contains(all, name) {
				all = append(all, name)
			}
		}
	}
	slices.Sort(all)
	return all
}

// Defaults returns the settings a new session of kind and role starts with
// before the caller's arguments: for the default kind, the configured
// defaults after the role preset; for another kind none (they are the
// default kind's), though the role must exist. An unknown role is
// INVALID_SESSION_PARAMS (-32602), with the default kind's defaults. The
// base instructions are the caller's to add.
func (c *Catalogue) Defaults(kind, role string) (ThreadSettings, error) {
	st, err := c.resolved(role)
	if err != nil || c.TakesDefaults(kind) {
		return st, err
	}
	return ThreadSettings{}, nil
}

// TakesDefaults reports whether the configured defaults, role presets and
// base instructions
// are the settings of kind's sessions: the default kind's.
func (c *Catalogue) TakesDefaults(kind string) bool { return c.kind(kind) == c.Default() }

// resolved is the configured defaults after the role preset, or the
// defaults and INVALID_SESSION_PARAMS for an unknown role.
func (c *Catalogue) resolved(role string) (ThreadSettings, error) {
	d := c.cfg.Defaults
	if role != "" {
		r, ok := c.cfg.Roles[role]
		if !ok {
			names := make([]string, 0, len(c.cfg.Roles))
			for n := range c.cfg.Roles {
				names = append(names, n)
			}
			sort.Strings(names)
			def := ThreadSettings{Model: d.Model, ReasoningEffort: d.ReasoningEffort, Sandbox: d.Sandbox, ApprovalPolicy: d.ApprovalPolicy}
			return def, proxyerr.New(proxyerr.ErrInvalidSessionParams, map[string]any{"role": role, "roles": names},
				"unknown role %q (configured roles: %s)", role, strings.Join(names, ", "))
		}
		d.Model = firstNonEmpty(r.Model, d.Model)
		d.ReasoningEffort = firstNonEmpty(r.ReasoningEffort, d.ReasoningEffort)
		d.Sandbox = firstNonEmpty(r.Sandbox, d.Sandbox)
		d.ApprovalPolicy = firstNonEmpty(r.ApprovalPolicy, d.ApprovalPolicy)
	}
	return ThreadSettings{Model: d.Model, ReasoningEffort: d.ReasoningEffort, Sandbox: d.Sandbox, ApprovalPolicy: d.ApprovalPolicy}, nil
}

// kind is kind, or the default kind for "".
func (c *Catalogue) kind(kind string) string { return firstNonEmpty(kind, c.Default()) }

// backend returns the backend of agent kind ("" is the default kind), or
// nil when none is configured.
func (c *Catalogue) backend(kind string) Backend { return c.cfg.Backends[c.kind(kind)] }

// of returns the backend of the session rec is the record of. A kind that
// is not configured (a session of another serve's configuration, adopted
// from the registry) fails with INTERNAL_ERROR (-32603) naming the kind
// and how to configure it.
func (c *Catalogue) of(rec registry.Session) (Backend, error) {
	kind := rec.Kind()
	if b := c.backendAt(kind, rec.Host); b != nil {
		return b, nil // on its host when it has one (hosts.go)
	}
	if rec.Host != "" {
		return nil, proxyerr.New(proxyerr.ErrInternal,
			map[string]any{"agent_id": rec.AgentID, "agent": kind, "host": rec.Host, "hosts": c.Hosts()},
			"session %s runs agent %q on host %q, which this serve does not have (hosts: %s); add [plugins.atm-agent-mcp.hosts.%s] and restart serve",
			rec.AgentID, kind, rec.Host, strings.Join(c.Hosts(), ", "), rec.Host)
	}
	return nil, proxyerr.New(proxyerr.ErrInternal,
		map[string]any{"agent_id": rec.AgentID, "agent": kind, "agents": c.Agents()},
		"session %s runs agent %q, which this serve does not have (agents: %s); %s",
		rec.AgentID, kind, strings.Join(c.Agents(), ", "), strings.Replace(agentConfigHint, "<name>", kind, 1))
}

// check checks the agent kind a new session asks for ("" is the default
// kind) and the settings asked for it: the kind must be one of
// Config.Backends, else INVALID_PARAMS (-32602) naming it, the kinds there
// are and how to configure it; and it must take each setting given (its
// backend's own, backend.Configurable), else INVALID_PARAMS naming the
// argument, the kind and the kinds that take it. Fields a caller leaves
// empty pass; the operator's policy is CheckSettings'.
func (c *Catalogue) check(kind string, st ThreadSettings) error {
	kind = c.kind(kind)
	if c.backend(kind) == nil {
		return proxyerr.New(proxyerr.ErrInvalidParams,
			map[string]any{"argument": "agent", "agent": kind, "agents": c.Agents()},
			"agent %q is not configured (agents: %s); %s",
			kind, strings.Join(c.Agents(), ", "), strings.Replace(agentConfigHint, "<name>", kind, 1))
	}
	own := c.Own(kind)
	values := st.values()
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if !set(values[name]) || slices.Contains(own, name) {
			continue
		}
		return c.notTaken(kind, name)
	}
	return nil
}

// notTaken is INVALID_PARAMS for a setting name that agent kind does not
// take: it names the kind whose setting it is and that kind's settings.
func (c *Catalogue) notTaken(kind, name string) error {
	for _, owner := range c.Agents() {
		if own := c.Own(owner); slices.Contains(own, name) {
			who := c.Name(owner)
			return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": name, "agent": kind, "setting_of": owner, "settings": own},
				"%s is a %s setting: agent %q does not take it (%s-only: %s); leave it out", name, who, kind, who, strings.Join(own, ", "))
		}
	}
	return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": name, "agent": kind},
		"%s is a setting no agent of this serve takes: agent %q does not take it; leave it out", name, kind)
}
