package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/places"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// Definitions is the JSON array of the tools' definitions (name,
// description, inputSchema, annotations), as tools/list lists them.
//
//go:embed tools.json
var Definitions []byte

// Client is what the tools need of the MCP connection (what the client
// can do is per request: mcpconn.ToolCall).
type Client interface {
	// Stats are the connection's event counters.
	Stats() mcpconn.Stats
}

// Restarter restarts the Codex child (agent_restart_codex) and counts its
// crashes and restarts (agent_status).
type Restarter interface {
	Restart(ctx context.Context, force bool) (RestartReport, error)
	Restarts() RestartCounts
}

// RestartReport says what a restart did.
type RestartReport struct {
	PID      int    `json:"pid"`
	Backend  string `json:"backend"`
	Restarts int    `json:"restarts"`
	Sessions int    `json:"sessions"` // live sessions that continue on the new child
	Previous string `json:"previous"` // how the previous child ended
}

// RestartCounts are the Codex child's crashes and restarts since the proxy
// started, and what waits on a restart.
type RestartCounts struct {
	Mode        string `json:"restart_mode"` // manual or on_demand
	Crashes     int    `json:"crashes"`      // children that died by themselves (not stopped by the proxy)
	Restarts    int    `json:"restarts"`
	LastRestart string `json:"last_restart_at,omitempty"`
	// Restarting: a restart is in progress; calls wait for it.
	Restarting bool `json:"restarting"`
	// MailWaitingOnRestart: Codex is down and will not come back by
	// itself, or a restart is in progress, so auto-mail is paused; mail
	// stays unread (pending_mail) and is delivered after the restart.
	MailWaitingOnRestart bool `json:"mail_waiting_on_restart"`
	// RestartRefusedUntil: after a crash loop, restarts are refused until
	// then (UTC); "" when a restart is allowed.
	RestartRefusedUntil string `json:"restart_refused_until,omitempty"`
	// RecentCrashes are the crashes within the crash-loop window, oldest
	// first.
	RecentCrashes []CrashRecord `json:"recent_crashes,omitempty"`
}

// CrashRecord is one crash of the Codex child.
type CrashRecord struct {
	At     string `json:"at"`     // UTC
	Status string `json:"status"` // how it died: "killed by signal killed"
}

// Config configures an Env. Zero values are documented per field.
type Config struct {
	// Sessions are the proxy's sessions. required.
	Sessions *session.Manager
	// ATM reads and writes the team's inboxes. required.
	ATM *atmclient.Client
	// Client is the MCP connection. required.
	Client Client
	// Team is the ATM team. required.
	Team string
	// Identity is the proxy instance's own identity. required.
	Identity string
	// Child reports the Codex child's state (agent_status). required.
	Child interface{ Status() backend.Status }
	// Agents report the state of the other agent kinds' backends by kind
	// (agent_status). optional.
	Agents map[string]interface{ Status() backend.Status }
	// LeadMail reports the path of mail for the client's own identity
	// (agent_status lead_mail). optional: nil leaves lead_mail out.
	LeadMail func() LeadMail
	// ConfigWarnings are the configuration's warnings (misspelt sections
	// and keys, a missing team), shown by agent_status. optional.
	ConfigWarnings []string
	// TeamProblem says what is wrong with the team ("team \"my-teem\"
	// does not exist …; did you mean my-team?"), "" when nothing is: a new
	// agent's start result warns with it and the ATM tools' "team not
	// found" carries it. optional: nil says nothing.
	TeamProblem func() string
	// Notices are what the client should know about how this server runs
	// (its identity moved to the next free one: team-lead-2), shown by
	// agent_status. optional.
	Notices []string
	// AgentCheck checks an agent kind before agent_start starts a session
	// of it (not Codex): configured, switched on, installed. It returns
	// INVALID_PARAMS (-32602) naming the kinds there are and how to add
	// one. optional: nil leaves the check to the session manager (a kind
	// without a backend).
	AgentCheck func(kind string) error
	// HostFor is the configured host of a new session of agent kind and
	// role (a role's host, else the kind's, else the plugin's; "" for this
	// machine), when the call names none (hosts.go). optional: nil runs
	// every session the call does not put on a host here.
	HostFor func(kind, role string) string
	// Hosts report the state of each host's connection (agent_status).
	// optional: nil shows none.
	Hosts func() map[string]HostStatus
	// Restarter restarts the child. optional: nil means agent_restart_codex
	// says the MCP server must be restarted.
	Restarter Restarter
	// BaseInstructions replace Codex's base instructions when the caller
	// does not give base-instructions. optional.
	BaseInstructions string
	// Isolation is the isolation of a session started without one and
	// whose role preset sets none (the configured isolation):
	// session.IsolationNone or session.IsolationWorktree. optional: ""
	// means none.
	Isolation string
	// RoleIsolation is the isolation of each role preset that sets one.
	// optional.
	RoleIsolation map[string]string
	// WorktreeBase is where an isolated session's branch starts when the
	// call gives no base (worktree_base). optional: "" means the HEAD of
	// the checkout that holds its cwd.
	WorktreeBase string
	// MergeCheck is the command agent_merge runs at the merged result when
	// the call gives no check (merge_check). optional: "" runs none.
	MergeCheck string
	// MaxResultChars caps agent_diff's and agent_merge's results, text and
	// structured content each (max_result_chars): the patch is paged to
	// fit. optional: 0 means 80000.
	MaxResultChars int
	// Places are the isolated sessions' places (the same the session
	// manager was given) and the conflict radar: agent_status lists the
	// overlaps. optional: nil lists none.
	Places *places.Places
	// MaxSessions is max_concurrent_threads, as agent_status reports it.
	MaxSessions int
	// DefaultIdentity is the identity of a session started without one.
	// optional: "" means "codex".
	DefaultIdentity string
	// Audit writes the audit trail. optional: nil records nothing.
	Audit *session.Auditor
	// CodexHome is where session discovery looks for rollouts. optional:
	// "" means $CODEX_HOME, else ~/.codex.
	CodexHome string
	// Cwd is the proxy's directory. required.
	Cwd string
	// Started is when the proxy started (agent_status uptime).
	Started time.Time
	// Logger receives logs. optional: nil discards.
	Logger *slog.Logger
	// Now returns the current time. optional: nil means time.Now.
	Now func() time.Time
	// ProgressInterval is how long a call waiting for a turn may go
	// without progress before it gets some saying what the agent is doing
	// (requests with a progress token only). optional: 0 means
	// DefaultProgressInterval; negative sends none.
	ProgressInterval time.Duration
}

// Env runs the proxy's 19 tools; it is the MCP connection's Handler.
type Env struct {
	cfg   Config
	log   *slog.Logger
	m     *session.Manager
	atm   *atmTools
	table map[string]tool
	rt    *roundTrips
	tasks *taskStore // MCP tasks (tasks.go)
}

// tool runs one tool; it may wait (the caller has released the reader).
type tool func(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error)

// names lists the tools for error messages, in tools.json's order.
var names = []string{"codex", "codex-reply", "atm_send", "atm_read", "atm_broadcast", "atm_pending_count",
	"agent_sessions", "agent_status", "agent_close", "agent_wait", "agent_interrupt", "agent_respond", "agent_list_codex_sessions", "agent_restart_codex",
	"agent_start", "agent_reply", "agent_diff", "agent_merge", "agent_fork"}

// New returns the tools over cfg.
func New(cfg Config) *Env {
	if cfg.DefaultIdentity == "" {
		cfg.DefaultIdentity = "codex"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	e := &Env{cfg: cfg, log: cfg.Logger, m: cfg.Sessions, rt: newRoundTrips(), tasks: newTaskStore(cfg.Now)}
	e.atm = &atmTools{atm: cfg.ATM, team: cfg.Team, sender: e.sender, audit: cfg.Audit.ATM, extraArgs: []string{"agent_id", "identity"},
		teamProblem: cfg.TeamProblem}
	e.table = map[string]tool{
		"codex":                     e.codex,
		"agent_start":               e.agentStart,
		"atm_send":                  e.atm.send,
		"atm_read":                  e.atm.read,
		"atm_broadcast":             e.atm.broadcast,
		"atm_pending_count":         e.atm.pending,
		"agent_sessions":            e.agentSessions,
		"agent_status":              e.agentStatus,
		"agent_close":               e.agentClose,
		"agent_wait":                e.agentWait,
		"agent_interrupt":           e.agentInterrupt,
		"agent_respond":             e.agentRespond,
		"agent_list_codex_sessions": e.listCodexSessions,
		"agent_restart_codex":       e.restartCodex,
		"agent_diff":                e.agentDiff,
		"agent_merge":               e.agentMerge,
		"agent_fork":                e.agentFork,
	}
	return e
}

// CallTool runs one tools/call. It is called on the goroutine reading the
// client: a codex-reply (or agent_reply) is checked and queued on its session right here, in
// the order the client sent it, and may run its turn on this goroutine up
// to the write to Codex (see session.Session.Run); every other tool first
// releases the reader.
func (e *Env) CallTool(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := checkEnums(c.Name, c.Args); err != nil {
		return nil, err // tools.json's enums hold for every tool (enums.go)
	}
	if c.RequestState != "" {
		if !isTurnTool(c.Name) {
			return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "requestState"},
				"%s never asks for input: call it without requestState", c.Name)
		}
		return e.retry(ctx, c)
	}
	switch c.Name {
	case "codex-reply":
		return answered(e.codexReply(ctx, c))
	case "agent_reply":
		return answered(e.agentReply(ctx, c))
	}
	mcpconn.Release(ctx)
	run, ok := e.table[c.Name]
	if !ok {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"tool": c.Name, "available": names},
			"unknown tool %q (available: %s)", c.Name, strings.Join(names, ", "))
	}
	return answered(run(ctx, c))
}

// answered maps a turn answered from the Codex reader to mcpconn's word
// for it.
func answered(r *mcpconn.ToolResult, err error) (*mcpconn.ToolResult, error) {
	if errors.Is(err, session.ErrAnswered) {
		return nil, mcpconn.ErrAnswered
	}
	return r, err
}

// callRef is a tools/call as a turn sees it.
type callRef struct{ c *mcpconn.ToolCall }

func (r callRef) RequestID() json.RawMessage { return r.c.RawID }
func (r callRef) Progress(msg string)        { r.c.Progress.Send(msg) }
func (r callRef) WantsProgress() bool        { return r.c.Progress != nil }
func (r callRef) Release()                   { r.c.Release() }
func (r callRef) TryReplyNow(t *session.TurnResult, commit func()) bool {
	return r.c.TryReplyNow(turnResult(t), commit)
}

// turnResult is the answer to a turn: the (capped) text, and in
// structuredContent the session's ids with the text and the status. A
// turn that resumed a session, or ran on a new thread in place of the
// session's, has "thread" (session.ThreadNote); when the thread was not
// continued, the text says so first.
func turnResult(t *session.TurnResult) *mcpconn.ToolResult {
	r := &mcpconn.ToolResult{
		Text:    t.Text,
		IsError: t.IsError,
		Structured: map[string]any{
			"agent_id": t.AgentID, "threadId": t.ThreadID, "identity": t.Identity, "content": t.Text, "status": t.Status,
		},
	}
	if t.Thread != nil {
		r.Structured.(map[string]any)["thread"] = t.Thread
		if note := t.Thread.Text(); note != "" {
			r.Text = note + "\n\n" + t.Text
		}
	}
	m := r.Structured.(map[string]any)
	if t.Steered || t.NotSteered {
		m["steered"] = t.Steered
	}
	if len(t.SubAgents) > 0 {
		m["sub_agents"] = t.SubAgents
	}
	if t.SubAgentsNote != "" {
		m["sub_agents_note"] = t.SubAgentsNote
		r.Text = strings.TrimRight(r.Text, "\n") + "\n\n[" + t.SubAgentsNote + "]"
	}
	withOutput(r, t)
	if t.Place != nil {
		v := worktreeOfPlace(t.Place)
		r.Structured.(map[string]any)["worktree"] = v
		if t.Thread != nil && t.Thread.Resumed {
			r.Text = strings.TrimRight(r.Text, "\n") + "\n\n[" + v.line() + "]" // where a resumed agent works
		}
	}
	return r
}

// sameIdentity checks that a tool's identity argument (optional) names the
// identity of the session its agent_id names: a tool that takes both never
// acts on one session in the name of another.
func sameIdentity(agentID, sessionIdentity, identity string) error {
	if identity != "" && identity != sessionIdentity {
		return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "identity"},
			"identity %q does not match the identity %q of session %s", identity, sessionIdentity, agentID)
	}
	return nil
}

// lookup returns the session of the agent_id argument or SESSION_NOT_FOUND.
func (e *Env) lookup(a mcpconn.Args) (*session.Session, error) {
	agentID, err := a.Str("agent_id")
	if err != nil {
		return nil, err
	}
	if agentID == "" {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "agent_id"}, "argument \"agent_id\" is required")
	}
	s := e.m.Get(agentID)
	if s == nil {
		if err := e.m.Absent().Discarded(agentID); err != nil {
			return nil, err // its first turn failed: say so and why
		}
		return nil, proxyerr.New(proxyerr.ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q", agentID)
	}
	return s, nil
}

// jsonText renders v as indented JSON for a text content block.
func jsonText(v any) string { return mcpconn.JSONText(v) }
