package session

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Backend is an agent kind's backend as sessions use it (a
// backend.Backend: serve's supervisor of the Codex child, an ACP
// backend). What else it can do is asked of it (its capabilities,
// agents.go).
type Backend interface {
	Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error)
	Interrupt(ctx context.Context, threadID string) error
	Status() backend.Status
}

// Registry is the instance registry as sessions use it: records of
// sessions and their summaries (*registry.Registry with its Dir; see
// RegistryOf).
type Registry interface {
	List(f registry.Filter) []registry.Session
	Add(s registry.Session) (registry.Session, error)
	Update(agentID string, fn func(*registry.Session)) (registry.Session, error)
	Remove(agentID string) error
	CloseSession(agentID string) (registry.Session, error)
	Finish(fns map[string]func(*registry.Session)) (map[string]registry.Session, error)
	ReadSummary(identity, backendID string) (string, error)
	WriteSummary(identity, backendID, text string) error
	HasSummary(identity, backendID string) bool
}

// RegistryOf adapts a *registry.Registry to Registry.
func RegistryOf(r *registry.Registry) Registry { return registryAdapter{r} }

type registryAdapter struct{ *registry.Registry }

func (r registryAdapter) ReadSummary(identity, backendID string) (string, error) {
	return r.Dir().ReadSummary(identity, backendID)
}

func (r registryAdapter) WriteSummary(identity, backendID, text string) error {
	return r.Dir().WriteSummary(identity, backendID, text)
}

func (r registryAdapter) HasSummary(identity, backendID string) bool {
	return r.Dir().HasSummary(identity, backendID)
}

// IDs are a session's agent_id and identity as JSON strings, for the
// events of its turns; nil without a session.
type IDs struct {
	AgentID, Identity []byte
}

// Sink passes a turn's events on to the client.
type Sink interface {
	// Event passes one event on; act is its translation
	// (backend.Event.Activity), what progress reports; call is the
	// client request that started the turn (nil for turns the proxy
	// starts; act is zero then, and for a call that wants no progress and
	// has no session). It runs on the backend's reader and must not block;
	// it reports false when the event was dropped. The session has
	// recorded the event before.
	Event(e backend.Event, act backend.Activity, ids IDs, call CallRef) bool
	// Flush writes the events held back since the backend's output last
	// ran dry (backend.Flusher).
	Flush()
}

// Question is an approval put to the user.
type Question struct {
	ApprovalID string
	AgentID    string
	Identity   string
	// Message is the human question ("[arch] Allow Codex to run `ls`?",
	// "[rev] Allow claude to use Fetch?").
	Message  string
	Approval *backend.Approval
	// RequestID is the JSON id of the client request whose turn asks, nil
	// for turns the proxy starts.
	RequestID json.RawMessage
	// Offer answers the approval directly, as an Asker that gets its answer
	// out of band does (a multi round-trip retry): it reports whether the
	// answer was taken (false: answered otherwise, timed out, closing).
	Offer func(Answer) bool
}

// Answer is a decision and how it was reached (for the audit).
type Answer struct {
	Decision backend.Decision
	Outcome  string
}

// Asker puts approvals to the user. There are four, chosen per turn by
// what the client declared (Turn.Asker): the client's elicitation request
// (a legacy client with elicitation), a multi round-trip result (a modern
// client with elicitation: the tools package), QueueAsker (listed for
// agent_respond) and NoAsker (Config.ApprovalFallback decides).
type Asker interface {
	// CanAsk reports whether the client can be asked at all.
	CanAsk() bool
	// Ask asks and returns the user's answer. It fails when the question
	// could not be asked or answered (the client is gone, ctx ended).
	Ask(ctx context.Context, q Question) (Answer, error)
}

// CallRef is what a turn needs of the client request that started it.
type CallRef interface {
	// RequestID is the request's JSON id.
	RequestID() json.RawMessage
	// WantsProgress reports whether the request asked for progress (a
	// progress token): progress costs a decode per event, done only then.
	WantsProgress() bool
	// Progress reports progress on the request (nothing without a token).
	Progress(msg string)
	// Release gives up the goroutine's role of reading the client, if it
	// has it, before the turn waits for anything.
	Release()
	// TryReplyNow answers the request at once with r when that costs no
	// waiting: then it calls commit (which records the turn) just before
	// the answer is written, and reports true.
	TryReplyNow(r *TurnResult, commit func()) bool
}

// MailStats is the mail layer's view of one identity, for agent_status.
type MailStats struct {
	AutoMail     bool
	Batches      int
	Delivered    int
	InFlight     int
	LastDelivery time.Time
	LastError    string
	Pending      int
	Polling      bool
}

// Mail is what sessions tell the mail layer (docs/requirements.md#fr-8).
type Mail interface {
	// Bind: identity is held by a live session, with its auto-mail switch.
	Bind(identity string, autoMail bool)
	// Unbind: identity is no longer held.
	Unbind(identity string)
	// Idle: the session of identity became idle (the post-turn mail check).
	Idle(identity string)
	// Stats returns the mail counters of identity.
	Stats(identity string) MailStats
}

// ThreadDefaults are the settings a new thread of the default kind gets
// unless the caller overrides them (agents.go); empty fields are not sent
// (the agent uses its own default).
type ThreadDefaults struct {
	Model           string
	ReasoningEffort string
	Sandbox         string
	ApprovalPolicy  string
}

// Config configures a Manager. Zero values are documented per field.
type Config struct {
	// Home is the ATM home, passed to the per-thread tool server. required.
	Home string
	// Team is the ATM team. required.
	Team string
	// Backends are the backends by agent kind (registry.DefaultKind's,
	// "claude", "gemini", a configured agent's name): a session runs on
	// the backend of the kind its registry record names, and what each
	// can do is asked of it (agents.go). required: the default kind's.
	Backends map[string]Backend
	// Registry keeps the sessions (RegistryOf). required.
	Registry Registry
	// Audit writes the audit trail. optional: nil records nothing.
	Audit *Auditor
	// Git reads the git facts of the sessions' directories. optional: nil
	// means a watcher of the Manager's own, closed by Stop.
	Git *gitctx.Watcher
	// Sink passes events on. optional: nil drops them.
	Sink Sink
	// Asker asks the user about approvals. optional: nil never asks.
	Asker Asker
	// Mail is the mail layer. optional: nil has none.
	Mail Mail
	// Observer is told of every change of a session (observe.go).
	// optional: nil tells nobody.
	Observer Observer
	// Changed is told when what the sessions have to show may have
	// changed: a session was added or dropped, a turn ended, or a session's
	// agent sent its first message (Session.Content). It is called with no
	// lock held, also on the backend's reader goroutine, and must not
	// block. optional: nil tells nobody.
	Changed func()
	// Places gives the sessions started with isolation "worktree" a place
	// of their own (place.go). optional: nil refuses such a start.
	Places Places
	// Hosts are the machines other than this one where sessions' agents
	// may run, by name (hosts.go). optional: nil refuses a session on a
	// host.
	Hosts map[string]Host
	// Budgets are the token budgets (budget.go). optional: the zero value
	// has none.
	Budgets Budgets
	// BudgetNotice tells the lead that a budget is 80 % used or used up
	// (budget.go); it is called on the budget watcher's goroutine and may
	// take its time. optional: nil tells nobody (the audit still has it).
	BudgetNotice func(BudgetNotice)
	// Prices price the agents' tokens by model (price.go). optional: nil
	// prices nothing (an agent's own cost is still shown).
	Prices Prices

	// Defaults are the default kind's thread settings before a role
	// preset or the caller's arguments; their sandbox is also the
	// operator's policy for every kind (policy.go).
	Defaults ThreadDefaults
	// Roles are the role presets by name (of the default kind's settings,
	// and of the policy as Defaults).
	Roles map[string]ThreadDefaults
	// BaseInstructions replace the agent's base instructions when the
	// caller does not give base-instructions. optional: "" sends none.
	BaseInstructions string
	// ExtraInstructions are appended to the injected instructions (the
	// multi-agent prompt). optional.
	ExtraInstructions string
	// ToolServer is the command line of the per-thread tools-only MCP
	// server; --team and --identity are added. optional: nil gives threads
	// no ATM tools.
	ToolServer []string
	// ToolServerEnv are extra environment variables for the tool server
	// (ATM_HOME is always passed). optional.
	ToolServerEnv map[string]string

	// RequestTimeout bounds each turn. optional: 0 means 300 s.
	RequestTimeout time.Duration
	// MaxSessions is max_concurrent_threads. optional: 0 means 10.
	MaxSessions int
	// ElicitationTimeout bounds how long an approval waits for an answer.
	// optional: 0 means 300 s.
	ElicitationTimeout time.Duration
	// ApprovalFallback decides approvals the client cannot be asked about:
	// "deny", "approve" or "queue" (answered with Session.Respond).
	// optional: "" means "deny".
	ApprovalFallback string
	// SummaryTimeout bounds the summary asked for on close and shutdown.
	// optional: 0 means 10 s.
	SummaryTimeout time.Duration
	// RecordsClosed is called once per Shutdown, as soon as every live
	// session's final record is written (closed, or interrupted for a
	// busy one) and before any summary is asked for; also when there was
	// nothing to write, or the write failed. optional.
	RecordsClosed func()
	// AutoMail delivers team mail to idle sessions as turns; a session may
	// override it when it is created.
	AutoMail bool
	// AutoMailFor overrides AutoMail per identity. optional: nil means
	// AutoMail for everyone.
	AutoMailFor func(identity string) bool
	// PersistThreads keeps sessions for resume across restarts. When
	// false, sessions of earlier runs are dropped from the registry at
	// start.
	PersistThreads bool
	// EventRing is the number of events kept per session. optional: 0
	// means 500.
	EventRing int
	// MaxResultChars caps a turn result's text; the rest is read with
	// Session.Detail and an offset. optional: 0 means 80000.
	MaxResultChars int
	// Cwd is the proxy's directory, the last fallback for a session's
	// cwd. required.
	Cwd string
	// Logger receives the logs. optional: nil discards.
	Logger *slog.Logger
	// Now returns the current time. optional: nil means time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 300 * time.Second
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 10
	}
	if c.ElicitationTimeout <= 0 {
		c.ElicitationTimeout = 300 * time.Second
	}
	if c.SummaryTimeout <= 0 {
		c.SummaryTimeout = 10 * time.Second
	}
	if c.ApprovalFallback == "" {
		c.ApprovalFallback = "deny"
	}
	if c.MaxResultChars <= 0 {
		c.MaxResultChars = 80000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// changed tells Changed, if any.
func (c *Config) changed() {
	if c.Changed != nil {
		c.Changed()
	}
}
