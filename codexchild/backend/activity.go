package backend

// ActivityKind says what an event means for the session that runs the
// turn, whatever the backend's dialect called it.
type ActivityKind string

// The activity kinds.
const (
	// ActivityNone: nothing to record but the event's type (deltas,
	// session bookkeeping); Summary may still name it.
	ActivityNone ActivityKind = ""
	// ActivityTurnStarted: a turn began; the items and the problem of the
	// previous one are forgotten.
	ActivityTurnStarted ActivityKind = "turn_started"
	// ActivityMessage: a complete agent message, in Text.
	ActivityMessage ActivityKind = "message"
	// ActivityItem: an item of the turn (a command, a file change, a tool
	// call) began or changed, in Item.
	ActivityItem ActivityKind = "item"
	// ActivityApproval: the agent asks for an approval; Summary says what.
	ActivityApproval ActivityKind = "approval"
	// ActivityProblem: an error or a retry notice, in Text (Retrying says
	// which): why a turn is slow or failed.
	ActivityProblem ActivityKind = "problem"
	// ActivityTokens: the thread's token usage so far, in Usage.
	ActivityTokens ActivityKind = "tokens"
	// ActivityNote: a line worth keeping and nothing else, in Summary (a
	// turn's abort reason).
	ActivityNote ActivityKind = "note"
)

// Activity is an event in backend-neutral terms: what the session layer
// records for agent_status and reports as progress. Each backend
// translates its own dialect ([Event.Activity]); the session layer never
// reads a dialect.
type Activity struct {
	Kind ActivityKind
	// Summary is the event's line in the session's event ring. "" lets the
	// session choose: a message's clipped text, a problem's clipped text,
	// an item's "summary: status".
	Summary string
	// Text is a message's or a problem's text.
	Text string
	// Retrying marks a problem after which the agent retries by itself.
	Retrying bool
	// Item is the item an ActivityItem event began or changed.
	Item *Item
	// Usage is the thread's token usage so far (ActivityTokens), in the
	// one shape of every kind (usage.go).
	Usage *Usage
	// SubAgents are the agents an agent runs of its own (Codex's collab
	// tools: spawn_agent and the like), as an item tells of them: each
	// one's thread and state. They are not members of the team.
	SubAgents []SubAgent
	// Model is the model the agent says the thread runs, on whichever
	// event tells it (whatever its Kind): mcp-server's session_configured,
	// app-server's turn/started (the model of its thread/start or
	// thread/resume answer), an ACP agent's turn start (the model its
	// session/new or session/load answer named, or the one set since).
	// "" says nothing.
	Model string
}

// Activity returns the event in backend-neutral terms: *e.Neutral when the
// backend translated it as it read it (ACP), else what e.Translate makes of
// it (Codex translates on demand: only the events worth a summary are
// read, and deltas and the like cost a switch on their type), else
// nothing.
func (e Event) Activity() Activity {
	switch {
	case e.Neutral != nil:
		return *e.Neutral
	case e.Translate != nil:
		return e.Translate(e)
	}
	return Activity{}
}

// SubAgent is an agent that an agent started of its own (a Codex collab
// spawn_agent), nested under it.
type SubAgent struct {
	// ThreadID is the sub-agent's own thread.
	ThreadID string `json:"thread_id"`
	// ParentThreadID is the thread of the agent that started it: the
	// turn's own thread, or a sub-agent's (a sub-agent of a sub-agent).
	// "" when its parent did not say.
	ParentThreadID string `json:"parent_thread_id,omitempty"`
	// Task is what it was asked to do (the spawn's prompt), when known.
	Task string `json:"task,omitempty"`
	// Status is its state as its parent last said ("pendingInit",
	// "running", "completed", "errored", "shutdown", …).
	Status string `json:"status"`
	// Message is what it last said of itself, when its parent passed it
	// on.
	Message string `json:"message,omitempty"`
}

// Item is one item of a turn as an event tells of it.
type Item struct {
	// ID names the item within its session (a call id).
	ID string
	// Type is "command", "file_change" or "tool_call".
	Type string
	// Status is the item's new status ("running", "completed", "failed
	// (exit 2)", …); "" leaves it as it was ("running" for a new item).
	Status string
	// Summary describes the item (a short command line, "3 files",
	// "server.tool"); "" leaves the item's as it was (an event that ends an
	// item need not repeat it).
	Summary string
	// Started marks the event that began the item (progress reports it).
	Started bool
}
