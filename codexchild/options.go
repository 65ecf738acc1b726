package codexchild

import (
	"maps"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
)

// Settings are the names of the settings only Codex understands, as the
// codex tool's arguments name them: what Codex's backends take besides the
// neutral thread parameters (backend.Configurable), and what a session of
// another kind refuses. This is the one list of them.
var Settings = []string{"approval-policy", "compact-prompt", "config", "profile", "reasoning-effort", "sandbox"}

// Options are the thread parameters only Codex understands: what
// backend.ThreadParams.Options holds for a Codex thread (Codex.Options
// makes it from the session's settings). Empty fields are not sent.
type Options struct {
	ApprovalPolicy string // untrusted | on-failure | on-request | never
	Sandbox        string // read-only | workspace-write | danger-full-access
	CompactPrompt  string
	Profile        string
	// Config holds config overrides (the codex tool's "config" argument,
	// app-server thread/start "config"), e.g. per-thread mcp_servers.
	Config map[string]any
}

// optionsOf is p's Codex options; zero when p has none (or another kind's).
func optionsOf(p backend.ThreadParams) Options {
	switch o := p.Options.(type) {
	case Options:
		return o
	case *Options:
		if o != nil {
			return *o
		}
	}
	return Options{}
}

// Codex is what every Codex backend is, as the seam asks it
// (backend/capabilities.go): its agents run in Codex's sandbox, it takes
// Codex's settings, its one child runs every thread and is restarted as a
// whole, and people call it Codex. The backends of this package embed it;
// so does anything that stands for a Codex backend (serve's supervisor of
// the Codex child, a test's fake Codex).
type Codex struct{}

// Sandboxed reports true: a Codex thread runs in the sandbox its settings
// choose.
func (Codex) Sandboxed() bool { return true }

// Settings returns Settings.
func (Codex) Settings() []string { return Settings }

// Options makes a thread's Options from the values of Codex's settings
// (backend.Configurable): the approval policy, sandbox, compact prompt and
// profile as they are, the config overrides with the reasoning effort as
// model_reasoning_effort. It returns an Options value.
func (Codex) Options(values map[string]any) any {
	str := func(name string) string { s, _ := values[name].(string); return s }
	var cfg map[string]any
	if c, ok := values["config"].(map[string]any); ok && len(c) > 0 {
		cfg = maps.Clone(c)
	}
	if e := str("reasoning-effort"); e != "" {
		if cfg == nil {
			cfg = map[string]any{}
		}
		cfg["model_reasoning_effort"] = e
	}
	return Options{ApprovalPolicy: str("approval-policy"), Sandbox: str("sandbox"), CompactPrompt: str("compact-prompt"),
		Profile: str("profile"), Config: cfg}
}

// RestartsAsWhole reports true: one Codex child runs every thread.
func (Codex) RestartsAsWhole() bool { return true }

// Name returns "Codex".
func (Codex) Name() string { return "Codex" }

// Translate is Codex's translation of its events into neutral terms
// (backend.Event.Translate, which the backends of this package set on every
// event): an mcp-server codex/event (activity_mcp.go) or an app-server
// notification (activity_app.go).
func Translate(e backend.Event) backend.Activity {
	if e.Method == "codex/event" {
		return mcpActivity(e)
	}
	return appActivity(e)
}

// exitError converts the supervisor's *ExitError.
func exitError(pe *childproc.ExitError) *backend.ExitError {
	return &backend.ExitError{Child: pe.Child, Status: backend.ExitStatus(pe.Status), Stderr: pe.Stderr, Reason: pe.Status.Reason, Cause: pe.Cause}
}
