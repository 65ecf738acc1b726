package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Allowed values of the enumerated keys.
var (
	// Sandboxes are the Codex sandbox modes.
	Sandboxes = []string{"read-only", "workspace-write", "danger-full-access"}
	// ApprovalPolicies are the approval policies Codex has known. Codex
	// mcp-server 0.153.4 accepts only on-request and never as a tool
	// argument, the app-server untrusted, on-request and never; on-failure
	// exists only up to 0.104 and draws a [Warning].
	ApprovalPolicies = []string{"untrusted", "on-failure", "on-request", "never"}
	// ReasoningEfforts are the values of Codex's model_reasoning_effort.
	ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
	// Backends select the Codex protocol: auto picks by the Codex version.
	Backends = []string{"auto", "mcp-server", "app-server"}
	// ApprovalFallbacks are what the proxy does with a Codex approval request
	// the client cannot answer (no elicitation support, or no answer within
	// elicitation_timeout_secs).
	ApprovalFallbacks = []string{"deny", "approve", "queue"}
	// MCPProtocols choose the MCP revisions serve speaks: auto (the
	// stateless 2026-07-28 to requests that declare it, the
	// initialize-based ones otherwise) or 2025-11-25 (only those: clients
	// that probe server/discover fall back to initialize).
	MCPProtocols = []string{"auto", "2025-11-25"}
	// CodexRestarts say what happens after Codex crashed: manual (nothing
	// until agent_restart_codex) or on_demand (the next call that needs
	// Codex starts a fresh one).
	CodexRestarts = []string{"manual", "on_demand"}
	// LogLevels are the accepted log levels.
	LogLevels = []string{"debug", "info", "warn", "error"}
	// Isolations say where an agent works: in a git worktree and branch of
	// its own, or in its cwd with everyone else.
	Isolations = []string{"worktree", "none"}
	// BusyMails say what becomes of mail to an agent whose turn runs:
	// steer (added to that turn, where the agent's backend can) or queue
	// (a turn of its own after it).
	BusyMails = []string{"steer", "queue"}
)

// Defaults of the keys that have one.
const (
	DefaultTeam     = "default"
	DefaultIdentity = "codex"
	// DefaultSessionIdentity is default_identity's default: the identity
	// of an agent started without one, whatever serve's own identity is.
	DefaultSessionIdentity      = "codex"
	DefaultCodexBin             = "codex"
	DefaultBackend              = "auto"
	DefaultSandbox              = "workspace-write"
	DefaultApprovalPolicy       = "on-request"
	DefaultApprovalFallback     = "deny"
	DefaultMCPProtocol          = "auto"
	DefaultCodexRestart         = "manual"
	DefaultMailPollInterval     = 5 * time.Second
	DefaultIdleTimeout          = 5 * time.Minute
	DefaultRequestTimeout       = 300 * time.Second
	DefaultElicitationTimeout   = 300 * time.Second
	DefaultHandshakeTimeout     = 60 * time.Second
	DefaultMaxConcurrentThreads = 10
	DefaultMaxMailMessages      = 10
	DefaultMaxMailMessageLength = 4096
	// DefaultMaxResultChars caps a tool result's text (under Claude Code's
	// 25k-token limit); the rest is paged with agent_status.
	DefaultMaxResultChars = 80000
	// DefaultEventBufferSize is the per-session event ring of agent_status.
	DefaultEventBufferSize = 500
	DefaultLogLevel        = "info"
	// DefaultIsolation: agents work in their cwd unless isolation is set.
	DefaultIsolation = "none"
	// DefaultWorktreePorts is the block of ports an isolated agent gets.
	DefaultWorktreePorts = 10
	// DefaultProgressInterval is how long a call waiting for a turn goes
	// without progress before it is told what the agent is doing.
	DefaultProgressInterval = time.Minute
	// DefaultSubAgentWait is how long a turn whose agent started
	// sub-agents of its own waits for them after the turn itself ended.
	DefaultSubAgentWait = 300 * time.Second
)

// SubagentsFeature is the Codex config key that --subagents sets, passed as
// `-c features.multi_agent=true` (see [Config.CodexArgs]). It is Codex's
// multi-agent ("collab") feature: the spawn_agent family of tools, offered
// to the model as multi_agent_v1 by Codex 0.153.4. Codex also accepts the
// legacy alias features.collab; newer releases enable the feature by
// default, so the flag matters for older ones and `subagents = false`
// switches it off explicitly.
const SubagentsFeature = "features.multi_agent"

// ErrUnknownRole is wrapped by [Config.ThreadDefaults] for a role that no
// file defines.
var ErrUnknownRole = errors.New("unknown role")

// SourceKind says which layer a value came from.
type SourceKind string

// Source kinds, highest precedence first.
const (
	SourceFlag    SourceKind = "flag"
	SourceEnv     SourceKind = "env"
	SourceFile    SourceKind = "file"
	SourceDefault SourceKind = "default"
)

// rank orders source kinds: a higher rank wins.
func (k SourceKind) rank() int {
	switch k {
	case SourceFlag:
		return 3
	case SourceEnv:
		return 2
	case SourceFile:
		return 1
	}
	return 0
}

// Explicit reports whether the value was given by a flag or an environment
// variable, which role presets do not override.
func (s Source) Explicit() bool { return s.Kind == SourceFlag || s.Kind == SourceEnv }

// Source says where one value came from.
type Source struct {
	Kind SourceKind `json:"kind"`
	// Detail is the flag ("--model"), the environment variable
	// ("ATM_AGENT_MCP_MODEL"), the file path, or for a default an optional
	// note ("Codex's own default").
	Detail string `json:"detail,omitempty"`
	// Key is the TOML key inside the file ("plugins.atm-agent-mcp.model");
	// empty unless Kind is SourceFile.
	Key string `json:"key,omitempty"`
}

// String renders the source for people: "flag --model",
// "env ATM_AGENT_MCP_MODEL", "file /x/.atm.toml (plugins.atm-agent-mcp.model)",
// "default".
func (s Source) String() string {
	switch {
	case s.Kind == SourceFile && s.Key != "":
		return fmt.Sprintf("file %s (%s)", s.Detail, s.Key)
	case s.Detail != "" && s.Kind == SourceDefault:
		return fmt.Sprintf("default (%s)", s.Detail)
	case s.Detail != "":
		return string(s.Kind) + " " + s.Detail
	}
	return string(s.Kind)
}

// Role is a preset from `[plugins.atm-agent-mcp.roles.<name>]`. Empty
// fields leave the instance's value in place.
type Role struct {
	Model           string `json:"model,omitempty"`
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	Sandbox         string `json:"sandbox,omitempty"`
	ApprovalPolicy  string `json:"approval_policy,omitempty"`
	// Isolation is the isolation of the role's agents (one of Isolations,
	// of every agent kind); "" leaves the configured one.
	Isolation string `json:"isolation,omitempty"`
	// Host is the host the role's agents run on (a name of Hosts, or
	// LocalHost); "" leaves the kind's or the instance's (see HostFor).
	Host string `json:"host,omitempty"`
	// BusyMail is busy_mail for the role's agents (one of BusyMails); ""
	// leaves the instance's.
	BusyMail string `json:"busy_mail,omitempty"`
	// BudgetTokens is the token budget of each of the role's sessions; 0
	// leaves budget_tokens (see BudgetFor).
	BudgetTokens int `json:"budget_tokens,omitempty"`
}

// Resume is the --resume request of `serve`.
type Resume struct {
	// Enabled is true when --resume was given.
	Enabled bool `json:"enabled"`
	// Target is the agent_id or identity to resume; empty means the most
	// recent session of the instance identity (FR-6.1).
	Target string `json:"target,omitempty"`
}

// Config is the resolved configuration. Every field is set by [Load];
// Sources holds, by key (see [Config.Entries]), where each value came from.
type Config struct {
	Home string // ATM home: ATM_HOME, else HOME
	Team string // team name
	// SessionTeam is true when Team is the team of the Claude Code session
	// that started serve (no team was configured; see RegistryTeam).
	SessionTeam bool
	// ClaudeCode is true when serve's client is Claude Code: it set
	// CLAUDE_CODE_SESSION_ID, CLAUDECODE=1 or its messaging socket. Its
	// user does not see serve's stderr, so serve must not fail its
	// connection where it can stand by and say why (see the agentmcp
	// package).
	ClaudeCode bool
	Identity   string // instance identity (see the package doc for the chain)
	// DefaultIdentity binds a session started without an explicit identity.
	DefaultIdentity string
	CodexBin        string // Codex executable: a name looked up in PATH, or a path
	Backend         string // one of Backends

	Model     string // model pin; "" forwards no model (FR-12.4)
	FastModel string // model used by --fast
	Fast      bool   // --fast: prefer FastModel (see EffectiveModel)
	// ReasoningEffort is Codex's model_reasoning_effort; "" leaves Codex's.
	ReasoningEffort string
	Sandbox         string // one of Sandboxes; Readonly forces read-only
	ApprovalPolicy  string // one of ApprovalPolicies
	Readonly        bool   // --readonly/--explore: every session read-only
	// Subagents is nil when not configured (Codex's own default applies),
	// else the value of SubagentsFeature passed to the child.
	Subagents *bool
	Role      string          // default role preset for new sessions; "" none
	Roles     map[string]Role // presets by name
	Resume    Resume
	// Agents are the ACP agent kinds by name: the presets (Presets),
	// overridden by and next to the agents of
	// [plugins.atm-agent-mcp.agents.<name>] (see AgentConfig and Agent).
	// Codex is not among them.
	Agents map[string]AgentConfig
	// Host is where agents run unless a role or their kind says otherwise
	// (see HostFor): a name of Hosts, LocalHost, or "" for this machine.
	Host string
	// Hosts are the machines reached over ssh where agents may run, by
	// name ([plugins.atm-agent-mcp.hosts.<name>]; see HostConfig).
	Hosts map[string]HostConfig

	BasePromptFile        string // absolute path, "" = Codex's own base instructions
	ExtraInstructionsFile string // absolute path, "" = the bundled extra instructions

	MailPollInterval time.Duration // idle mail polling interval
	// IdleTimeout stops idle mail polling after this long without mail;
	// 0 never stops.
	IdleTimeout    time.Duration
	PersistThreads bool          // persist the registry for resume
	RequestTimeout time.Duration // per codex/codex-reply forward (FR-14)
	// ProgressInterval: a call waiting for a turn that sent no progress for
	// this long gets progress saying what the agent is doing (requests with
	// a progress token); 0 sends none.
	ProgressInterval time.Duration

	MaxConcurrentThreads int // live sessions per instance (FR-3.3)

	// Isolation is where an agent started without one works (one of
	// Isolations): in a worktree of its own, or in its cwd. A role preset's
	// isolation overrides it for the role's agents (see IsolationFor).
	Isolation string
	// WorktreeBase is where an isolated agent's branch starts when the
	// call gives no base; "" means the HEAD of the checkout of its cwd.
	WorktreeBase string
	// WorktreeSetup is a command run with sh -c in each new worktree before
	// the agent's first turn; when it fails, the start fails and nothing is
	// kept. "" runs none.
	WorktreeSetup string
	// WorktreePorts is how many ports each isolated agent gets (0: none).
	WorktreePorts int
	// MergeCheck is the command (sh -c) that agent_merge runs in a
	// temporary worktree at the merged tree when the call gives no check:
	// the lead's branch moves only if it exits with 0. "" runs none.
	MergeCheck string

	// BudgetTokens is each session's token budget when its role sets none
	// (0: none; see BudgetFor); TeamBudgetTokens the team's, every session
	// of the team together in every serve (0: none). BudgetInterrupt also
	// interrupts the running turn that reaches a budget.
	BudgetTokens     int
	TeamBudgetTokens int
	BudgetInterrupt  bool
	// Prices are the models' prices by model name (budget.go).
	Prices map[string]Price

	AutoMail bool // inject incoming mail as turns (FR-8.8)
	// BusyMail is what becomes of mail to an agent whose turn runs (one of
	// BusyMails); "" (not set) steers the lead's mail and queues the
	// others'. A role preset's busy_mail overrides it for the role.
	BusyMail string
	// SubAgentWait bounds how long a turn whose agent started sub-agents
	// of its own (Codex's spawn_agent) waits for them after the turn
	// itself ended, before it is reported done.
	SubAgentWait time.Duration
	// PerThreadAutoMail overrides AutoMail for the sessions bound to an
	// identity; see AutoMailFor.
	PerThreadAutoMail    map[string]bool
	MaxMailMessages      int // messages per injected turn (FR-8.5)
	MaxMailMessageLength int // characters per message before truncation
	MaxResultChars       int // tool result text cap, in characters
	EventBufferSize      int // events kept per session for agent_status

	// ElicitationTimeout bounds the wait for the client's answer to an
	// approval request (FR-18.4); then ApprovalFallback applies.
	ElicitationTimeout time.Duration
	// ApprovalFallback is what happens to an approval the client does not
	// answer: deny (default), approve, or queue it for the status/respond
	// tools.
	ApprovalFallback string
	// HandshakeTimeout bounds Codex's start-up handshake (capped to
	// RequestTimeout): a Codex that hangs at start fails the first call
	// within it.
	HandshakeTimeout time.Duration
	// CodexRestart is one of CodexRestarts.
	CodexRestart string
	// MCPProtocol is one of MCPProtocols.
	MCPProtocol string

	// LeadPush sends mail for Identity (the client's own) into the Claude
	// Code session through MessagingSocket when there is one (lead_push).
	LeadPush bool
	// MessagingSocket and MessagingToken are Claude Code's messaging socket
	// and its token (CLAUDE_CODE_MESSAGING_SOCKET and _TOKEN); "" when
	// serve does not run under Claude Code.
	MessagingSocket string
	MessagingToken  string

	LogLevel string // one of LogLevels
	LogFile  string // absolute path; "" logs to stderr

	// ConfigFile is the file named by --config or ATM_CONFIG, if any.
	ConfigFile string
	// Files are the configuration files that were read, highest layer first.
	Files []string

	Sources  map[string]Source
	Warnings []Warning
}

// EffectiveModel returns the model to forward to Codex for a session without
// a role, "" meaning none (Codex's own default, FR-12.4).
//
// --fast (or ATM_AGENT_MCP_FAST) selects FastModel without changing Model: a
// model pinned in a lower layer (a file, or the environment when --fast is a
// flag) stays configured and is shown by `config`, but the fast model is
// used while fast is on. A model given in the same layer or a higher one
// wins (an explicit --model beats ATM_AGENT_MCP_FAST); --model together with
// --fast is rejected by Load as contradictory.
func (c *Config) EffectiveModel() string {
	if c.fastWins() {
		return c.FastModel
	}
	return c.Model
}

// fastWins reports whether fast is on and outranks the model's source.
func (c *Config) fastWins() bool {
	return c.Fast && c.Sources["fast"].Kind.rank() > c.Sources["model"].Kind.rank()
}

// modelSource is the source of EffectiveModel.
func (c *Config) modelSource() Source {
	if c.fastWins() {
		return c.Sources["fast"]
	}
	return c.Sources["model"]
}

// ThreadSettings are the Codex settings of one session.
type ThreadSettings struct {
	Role            string `json:"role,omitempty"`
	Model           string `json:"model,omitempty"`            // "" = forward none
	ReasoningEffort string `json:"reasoning_effort,omitempty"` // "" = forward none
	Sandbox         string `json:"sandbox"`
	ApprovalPolicy  string `json:"approval_policy"`
}

// CodexConfig returns the per-thread Codex config overrides of these
// settings (the `config` argument of the codex tool, or of thread/start):
// model_reasoning_effort when set. It is nil when there is nothing to
// override.
func (t ThreadSettings) CodexConfig() map[string]any {
	if t.ReasoningEffort == "" {
		return nil
	}
	return map[string]any{"model_reasoning_effort": t.ReasoningEffort}
}

// ThreadDefaults returns the settings of a new session started with role
// ("" means the instance's Role, which may be empty: no preset).
//
// A role preset overrides values that come from files and defaults, but not
// those given by a flag or an environment variable: `serve --role worker
// --sandbox read-only` keeps read-only even if the worker preset says
// workspace-write, and --fast keeps the fast model. --readonly always wins:
// every session is read-only. An undefined role fails with an error
// wrapping ErrUnknownRole.
func (c *Config) ThreadDefaults(role string) (ThreadSettings, error) {
	if role == "" {
		role = c.Role
	}
	ts := ThreadSettings{
		Role:            role,
		Model:           c.EffectiveModel(),
		ReasoningEffort: c.ReasoningEffort,
		Sandbox:         c.Sandbox,
		ApprovalPolicy:  c.ApprovalPolicy,
	}
	if role != "" {
		r, ok := c.Roles[role]
		if !ok {
			return ThreadSettings{}, c.unknownRole(role)
		}
		pick := func(dst *string, preset string, src Source) {
			if preset != "" && !src.Explicit() {
				*dst = preset
			}
		}
		pick(&ts.Model, r.Model, c.modelSource())
		pick(&ts.ReasoningEffort, r.ReasoningEffort, c.Sources["reasoning_effort"])
		pick(&ts.Sandbox, r.Sandbox, c.Sources["sandbox"])
		pick(&ts.ApprovalPolicy, r.ApprovalPolicy, c.Sources["approval_policy"])
	}
	if c.Readonly {
		ts.Sandbox = "read-only"
	}
	return ts, nil
}

// unknownRole builds the error for an undefined role.
func (c *Config) unknownRole(role string) error {
	names := slices.Sorted(maps.Keys(c.Roles))
	if len(names) == 0 {
		return fmt.Errorf("%w %q: no roles are defined (add [plugins.atm-agent-mcp.roles.%s] to .atm.toml)", ErrUnknownRole, role, role)
	}
	return fmt.Errorf("%w %q: defined roles are %s", ErrUnknownRole, role, strings.Join(names, ", "))
}

// CodexArgs returns the `-c key=value` overrides for the Codex child's
// command line, to be placed after the subcommand (`codex mcp-server -c ...`
// or `codex app-server -c ...`). They apply to every session of the child:
//
//   - model_reasoning_effort="<effort>" when ReasoningEffort is set (a role
//     with its own effort overrides it per thread through
//     [ThreadSettings.CodexConfig]);
//   - features.multi_agent=true|false when Subagents is set (--subagents,
//     ATM_AGENT_MCP_SUBAGENTS or `subagents`).
//
// The model, sandbox and approval policy are not here: they are per-thread
// arguments (see ThreadDefaults). Values are TOML, as Codex parses them.
func (c *Config) CodexArgs() []string {
	var args []string
	if c.ReasoningEffort != "" {
		args = append(args, "-c", fmt.Sprintf("model_reasoning_effort=%q", c.ReasoningEffort))
	}
	if c.Subagents != nil {
		args = append(args, "-c", fmt.Sprintf("%s=%t", SubagentsFeature, *c.Subagents))
	}
	return args
}

// IsolationFor returns the isolation of an agent started with role ("":
// the instance's Role, which may be empty): a role preset's own, unless
// isolation comes from a flag or the environment, else Isolation. The
// session layer's caller gives it per role (RoleIsolations).
func (c *Config) IsolationFor(role string) string {
	if role == "" {
		role = c.Role
	}
	if r, ok := c.Roles[role]; ok && r.Isolation != "" && !c.Sources["isolation"].Explicit() {
		return r.Isolation
	}
	return c.Isolation
}

// AutoMailFor reports whether incoming mail for identity is injected as
// turns: the identity's per_thread_auto_mail entry when there is one,
// otherwise auto_mail.
func (c *Config) AutoMailFor(identity string) bool {
	if v, ok := c.PerThreadAutoMail[identity]; ok {
		return v
	}
	return c.AutoMail
}
