package proxy

import (
	"log/slog"
	"os"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// ThreadDefaults are the Codex settings a new thread gets unless the caller
// overrides them; empty fields are not sent (Codex uses its own default).
type ThreadDefaults = session.ThreadDefaults

// Options configure a Server. Zero values are documented per field.
type Options struct {
	// Home is the ATM home (ATM_HOME or $HOME). required.
	Home string
	// Team is the ATM team. required.
	Team string
	// Identity is the proxy instance's own identity: it names the instance
	// registry and is claimed for the proxy's lifetime. required.
	Identity string
	// DefaultIdentity is the identity of a session started without one.
	// optional: "" means "codex".
	DefaultIdentity string
	// RegistryTeam and RegistryInstance name the registry: its directory
	// under agent-sessions and the instance registry (and claim) in it.
	// optional: "" means Team and Identity.
	RegistryTeam, RegistryInstance string
	// SessionTeam says Team is a Claude Code session team, whose name
	// changes with every session: at start the proxy takes over the
	// sessions of the registry's other instances whose proxy has ended, so
	// that a later Claude Code session resumes the Codex agents of earlier
	// ones. optional.
	SessionTeam bool
	// TeamMissing says the team has no config.json (a typo, or a team not
	// created yet): the registry and the audit log then create nothing
	// until the first session is recorded, which claims the instance
	// identity (registry.Config.Deferred), so a wrong --team leaves nothing
	// on disk. optional: false claims the instance identity in New.
	TeamMissing bool

	// LeadPush pushes mail for Identity (the client's own) into the Claude
	// Code session through MessagingSocket (lead_push). optional: false
	// leaves it in the inbox.
	LeadPush bool
	// MessagingSocket and MessagingToken are Claude Code's messaging socket
	// and its token. optional: "" means none (mail for the lead stays in
	// the inbox).
	MessagingSocket, MessagingToken string
	// ClaudeSessionID is the id of the Claude Code session that started
	// serve (CLAUDE_CODE_SESSION_ID). With it the proxy follows its
	// conversation when Claude Code moves it to a background session
	// (handover.go): it hands its agents over when its client is parked,
	// and takes up those handed to it. optional: "" (outside Claude Code)
	// follows nothing.
	ClaudeSessionID string
	// ClientPID is the pid of the process that started serve: Claude Code
	// (its launcher execs serve). optional: 0 means os.Getppid().
	ClientPID int
	// ParkPoll is how often the proxy reads its Claude Code client's
	// record (and, when its conversation came from another session, looks
	// for the agents handed to it). optional: 0 means 1 s; negative
	// follows nothing.
	ParkPoll time.Duration
	// TakeOverWait bounds how long a proxy whose conversation came from
	// another Claude Code session waits for the agents handed to it.
	// optional: 0 means 60 s.
	TakeOverWait time.Duration
	// ConfigWarnings are the configuration's warnings (misspelt sections
	// and keys, a missing team): agent_status lists them and the first tool
	// error of the connection carries them (configwarn.go), since the log
	// on stderr is hidden from Claude Code's users. optional.
	ConfigWarnings []string
	// TeamProblem says what is wrong with the team, "" when nothing is
	// (tools.Config.TeamProblem: a new agent's result warns with it, and
	// "team not found" carries it). optional.
	TeamProblem func() string
	// Notices are what the client should know about how this server runs,
	// such as an identity that moved to the next free one because another
	// serve held the default (team-lead-2): the server's instructions end
	// with them, agent_status lists them and the first tool result of the
	// connection carries them (notice.go). optional.
	Notices []string

	// Backend is the Codex child. required.
	Backend backend.Backend
	// NewBackend makes a fresh Codex child for a restart (agent_restart_codex,
	// CodexRestart on_demand). optional: nil means Codex cannot be
	// restarted without restarting the proxy.
	NewBackend func() (backend.Backend, error)
	// CodexRestart is RestartManual or RestartOnDemand. optional: ""
	// means manual.
	CodexRestart string
	// Agents are the backends of the other agent kinds by kind ("claude",
	// "gemini", a configured agent's name: acpbackend.New), for
	// agent_start; the proxy closes them at shutdown. optional: nil runs
	// Codex sessions only.
	Agents map[string]backend.Backend
	// AgentCheck checks an agent kind before agent_start starts a session
	// of it (tools.Config.AgentCheck): switched on, installed. optional.
	AgentCheck func(kind string) error
	// Hosts are the machines other than this one where agents run, by
	// name (hosts.go); serve connects to each when it runs. optional: nil
	// runs every agent here.
	Hosts map[string]Host
	// HostFor is the configured host of a new session of an agent kind and
	// role ("" for this machine; tools.Config.HostFor). optional.
	HostFor func(kind, role string) string
	// StaleInstance reports whether the agents a host keeps for an
	// instance tag (sshhost.Tag.Instance) were left by a serve that is
	// gone: each time a host's connection is made, those are stopped there
	// (this serve's own instance is stopped by the connection itself).
	// optional: nil stops none but this serve's own.
	StaleInstance func(tag string) bool

	// Defaults are the thread settings before a role preset or the caller's
	// arguments.
	Defaults ThreadDefaults
	// Roles are the role presets by name.
	Roles map[string]ThreadDefaults
	// BaseInstructions replace Codex's base instructions when the caller does
	// not give base-instructions. optional: "" sends none.
	BaseInstructions string
	// ExtraInstructions are appended to the injected developer instructions
	// (the multi-agent prompt). optional.
	ExtraInstructions string

	// Budgets are the token budgets (session.Budgets; budget.go tells the
	// lead). optional: none.
	Budgets session.Budgets
	// Prices price the agents' tokens by model. optional: nil prices
	// nothing.
	Prices session.Prices

	// Isolation is where an agent started without one, and without a role
	// preset that sets one, works: "worktree" (a git worktree of its own)
	// or "none". optional: "" means none.
	Isolation string
	// RoleIsolation is the isolation of each role preset's agents.
	// optional.
	RoleIsolation map[string]string
	// BusyMail is what becomes of mail to an agent whose turn runs
	// (busy_mail): BusyMailSteer adds it to that turn where the agent's
	// backend can (backend.Steerer), BusyMailQueue keeps it for a turn of
	// its own after. optional: "" steers the mail of the lead (serve's
	// own identity) and queues the others'.
	BusyMail string
	// RoleBusyMail is BusyMail for each role preset that sets it.
	// optional.
	RoleBusyMail map[string]string
	// WorktreeBase is where an isolated agent's branch starts when the
	// call names no base. optional: "" means the HEAD of its cwd's checkout.
	WorktreeBase string
	// WorktreeSetup is a command run in each new worktree before the
	// agent's first turn (sh -c); when it fails, the start fails and
	// nothing is kept. optional.
	WorktreeSetup string
	// WorktreePorts is how many ports each isolated agent gets. optional:
	// 0 gives none.
	WorktreePorts int
	// MergeCheck is the check agent_merge runs when the call gives none
	// (merge_check). optional: "" runs none.
	MergeCheck string
	// PortsDir holds the port reservations (ports.lock and one record per
	// block), private to the serves given the same directory. optional:
	// "" means the machine-wide workspace.SharedPortsDir, shared by every
	// serve of every user.
	PortsDir string

	// RequestTimeout bounds each codex/codex-reply turn. optional: 0 means 300 s.
	RequestTimeout time.Duration
	// MaxSessions is max_concurrent_threads. optional: 0 means 10.
	MaxSessions int
	// ElicitationTimeout bounds how long an approval waits for the client.
	// optional: 0 means 300 s.
	ElicitationTimeout time.Duration
	// ApprovalFallback decides approvals the client cannot be asked about
	// (it did not declare elicitation): "deny" (default) or "approve".
	ApprovalFallback string
	// MCPProtocol is mcpconn.ProtocolAuto or mcpconn.ProtocolLegacy
	// (Config.Protocol). optional: "" means auto.
	MCPProtocol string
	// SummaryTimeout bounds the summary requested on close and shutdown.
	// optional: 0 means 10 s.
	SummaryTimeout time.Duration
	// RecordsClosed is called at shutdown as soon as every session's
	// final record is written, before the summaries
	// (session.Config.RecordsClosed): serve holds the signals after the
	// first until then (cli.RecordsWritten). optional.
	RecordsClosed func()

	// AutoMail delivers team mail to idle sessions as turns (FR-8); a
	// session may override it with the codex tool's auto_mail argument.
	AutoMail bool
	// AutoMailFor overrides AutoMail per identity (per_thread_auto_mail).
	// optional: nil means AutoMail for everyone.
	AutoMailFor func(identity string) bool
	// MailPollInterval is the safety-net poll of inboxes. optional: 0 means 5 s.
	MailPollInterval time.Duration
	// MailIdleTimeout stops the poll of an identity after this long without
	// mail (idle_timeout_ms); the watch keeps working. optional: 0 never stops.
	MailIdleTimeout time.Duration
	// PersistThreads keeps sessions for resume across restarts
	// (persist_threads). When false, sessions of earlier runs are dropped
	// from the registry at start and no summaries are asked for at shutdown.
	PersistThreads bool
	// MaxMailMessages per injected turn. optional: 0 means 10.
	MaxMailMessages int
	// MaxMailMessageLength in characters per message. optional: 0 means 4096.
	MaxMailMessageLength int

	// ToolServer is the command line of the per-thread tools-only MCP server
	// (this binary with "tools"); the proxy adds --team and --identity.
	// optional: nil disables per-thread ATM tools for Codex.
	ToolServer []string
	// ToolServerEnv are extra environment variables for the tool server
	// (ATM_HOME is always passed). optional.
	ToolServerEnv map[string]string

	// ProgressInterval is how long a call waiting for a turn goes without
	// progress before it gets some saying what the agent is doing.
	// optional: 0 means tools.DefaultProgressInterval, negative none.
	ProgressInterval time.Duration
	// EventRing is the number of events kept per session for agent_status.
	// optional: 0 means 500.
	EventRing int
	// MaxResultChars caps a tool result's text (Claude Code rejects results
	// over about 25k tokens); the rest is available with agent_status and an
	// offset. optional: 0 means 80000.
	MaxResultChars int
	// CodexHome is where session discovery looks for rollouts. optional: ""
	// means $CODEX_HOME, else ~/.codex.
	CodexHome string

	// EventQueue is the bound of the event queue toward the client.
	// optional: 0 means 1024.
	EventQueue int
	// Cwd is the proxy's working directory, the last fallback for a
	// session's cwd. optional: "" means os.Getwd().
	Cwd string
	// Logger receives the proxy's logs. optional: nil means discard.
	Logger *slog.Logger
	// Now returns the current time. optional: nil means time.Now.
	Now func() time.Time
	// Version is the version reported in serverInfo. optional: "" means
	// "dev".
	Version string

	// wrapRegistry, when set (tests), wraps the sessions' view of the
	// registry.
	wrapRegistry func(session.Registry) session.Registry
}

// setDefaults fills the optional fields.
func (o *Options) setDefaults() {
	if o.DefaultIdentity == "" {
		o.DefaultIdentity = "codex"
	}
	if o.RegistryTeam == "" {
		o.RegistryTeam = o.Team
	}
	if o.RegistryInstance == "" {
		o.RegistryInstance = o.Identity
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 300 * time.Second
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10
	}
	if o.Cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			o.Cwd = wd
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.ClientPID == 0 {
		o.ClientPID = os.Getppid()
	}
	if o.ParkPoll == 0 {
		o.ParkPoll = time.Second
	}
	if o.TakeOverWait == 0 {
		o.TakeOverWait = 60 * time.Second
	}
}
