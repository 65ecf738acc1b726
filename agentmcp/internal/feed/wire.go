package feed

import (
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// The states of an agent, as a view shows them.
const (
	StateWorking     = "working"          // a turn runs
	StateApproval    = "waiting_approval" // a turn waits for an approval
	StateWaitingMail = "waiting_mail"     // idle; its mail becomes its next turn
	StateIdle        = "idle"             // idle, and mail waits for a reply (auto-mail off)
	StateFailed      = "failed"           // its last turn failed
	StateClosed      = "closed"
	// StateGone is a view's: the serve that ran the agent has exited.
	StateGone = "gone"
)

// Serve describes the serve a feed belongs to.
type Serve struct {
	Instance string    `json:"instance"`
	Team     string    `json:"team"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	Version  string    `json:"version,omitempty"`
}

// Agent is one agent session as a view shows it.
type Agent struct {
	AgentID    string    `json:"agent_id"`
	Identity   string    `json:"identity"`
	Kind       string    `json:"kind"`
	Model      string    `json:"model,omitempty"`
	Role       string    `json:"role,omitempty"`
	Tag        string    `json:"tag,omitempty"`
	Cwd        string    `json:"cwd,omitempty"`
	Repo       string    `json:"repo,omitempty"`
	Branch     string    `json:"branch,omitempty"`
	State      string    `json:"state"`
	StateSince time.Time `json:"state_since"`
	// Status is the session's own status (agent_status's).
	Status string `json:"status"`
	// Item is what it does now: the running item, or "thinking" while a
	// turn runs between items; nil when no turn runs.
	Item        *Item          `json:"item,omitempty"`
	TurnStarted *time.Time     `json:"turn_started,omitempty"`
	Turns       int            `json:"turns"`
	Queued      int            `json:"queued"`
	Spans       []Span         `json:"spans,omitempty"`
	Usage       *backend.Usage `json:"usage,omitempty"`
	// Budget is its token budget and how much of it is used; nil without
	// one.
	Budget *session.BudgetState `json:"budget,omitempty"`
	// Worktree is its own git worktree (isolation worktree) with the stat
	// of its change; nil without one (diff.go).
	Worktree   *Worktree          `json:"worktree,omitempty"`
	UnreadMail int                `json:"unread_mail"`
	Approvals  []Approval         `json:"approvals,omitempty"`
	Messages   []string           `json:"messages,omitempty"`
	Events     []Event            `json:"events,omitempty"`
	Last       *Result            `json:"last,omitempty"`
	Problem    string             `json:"problem,omitempty"`
	SubAgents  []backend.SubAgent `json:"sub_agents,omitempty"`
	// Serve is the instance of the serve that runs it (set by a view).
	Serve string `json:"serve,omitempty"`
}

// Item is the current item of a running turn.
type Item struct {
	Type    string    `json:"type"` // command, file_change, tool_call, sub_agent, thinking
	Summary string    `json:"summary"`
	Since   time.Time `json:"since"`
}

// Span is one turn: when it started and ended (End zero while it runs)
// and how it ended.
type Span struct {
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"`
	Status string    `json:"status,omitempty"`
}

// Approval is a pending approval.
type Approval struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Question string    `json:"question"`
	Command  string    `json:"command,omitempty"`
	Cwd      string    `json:"cwd,omitempty"`
	Since    time.Time `json:"since"`
}

// Event is one recorded event.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Summary string    `json:"summary,omitempty"`
}

// Result is how the last turn ended.
type Result struct {
	Status string    `json:"status"`
	Text   string    `json:"text,omitempty"`
	Error  string    `json:"error,omitempty"`
	At     time.Time `json:"at"`
}

// Mail is one mail between members of the team.
type Mail struct {
	Key     string    `json:"key"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	At      time.Time `json:"at"`
	Summary string    `json:"summary,omitempty"`
	Text    string    `json:"text"`
	Read    bool      `json:"read"`
}

// Frame is one line of the feed, either way. Type says which fields
// count:
//
//	hello     serve → client  Serve
//	snapshot  serve → client  Agents, MailList (the recent mail, oldest first)
//	agent     serve → client  Agent (its whole state)
//	mail      serve → client  Mail (one)
//	answer    client → serve  ID, AgentID, ApprovalID, Decision ("approve",
//	                          "approve_for_session", "deny"), Reason, From
//	answered  serve → client  ID, OK, Error
//	diff      client → serve  ID, AgentID: the agent's change (diff.go)
//	diffed    serve → client  ID, AgentID, OK, Text (the unified patch, at
//	                          most maxPatch characters), More, Error
type Frame struct {
	Type       string  `json:"type"`
	Serve      *Serve  `json:"serve,omitempty"`
	Agents     []Agent `json:"agents,omitempty"`
	Agent      *Agent  `json:"agent,omitempty"`
	MailList   []Mail  `json:"mail_list,omitempty"`
	Mail       *Mail   `json:"mail,omitempty"`
	ID         int64   `json:"id,omitempty"`
	AgentID    string  `json:"agent_id,omitempty"`
	ApprovalID string  `json:"approval_id,omitempty"`
	Decision   string  `json:"decision,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	From       string  `json:"from,omitempty"`
	OK         bool    `json:"ok,omitempty"`
	Error      string  `json:"error,omitempty"`
	Text       string  `json:"text,omitempty"`
	More       bool    `json:"more,omitempty"`
}
