package acp

// State is what an agent or a session is doing.
type State string

// The states.
const (
	StateIdle             State = "idle"
	StateRunning          State = "running"           // a turn is running
	StateAwaitingApproval State = "awaiting-approval" // a permission request waits for its answer
	StateDead             State = "dead"              // the agent process has exited
)

// Status reports the client's state. It never blocks on the agent.
type Status struct {
	State State
	PID   int
	// Exit says how the agent died; nil while it runs.
	Exit *ExitStatus
	// Reason is why the client killed it, when it did.
	Reason string
	Agent  AgentInfo
	// Sessions is the number of open sessions; Running the number of
	// running turns; Permissions the number of pending permission
	// requests.
	Sessions, Running, Permissions int
	// DroppedEvents counts events dropped because OnEvent was slow.
	DroppedEvents int64
	// GarbageLines counts lines of stdout that were not JSON-RPC.
	GarbageLines int64
	// LateUpdates counts updates that belonged to no running turn (after a
	// prompt's answer, or of an unknown session).
	LateUpdates int64
	// BadUpdates counts session/update notifications that could not be
	// read.
	BadUpdates int64
}

// Status reports the agent's state: dead once it has exited, else
// awaiting-approval while a permission request waits, running while a turn
// runs, idle otherwise.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{
		PID: c.proc.PID(), Agent: c.info, Sessions: len(c.sessions), Permissions: len(c.perms),
		DroppedEvents: c.dropped.Load(), GarbageLines: c.garbage.Load(), LateUpdates: c.late, BadUpdates: c.badUpdate,
	}
	for _, s := range c.sessions {
		if s.turn != nil {
			st.Running++
		}
	}
	switch {
	case c.exitErr != nil:
		st.State = StateDead
		e := c.exitErr.Status
		st.Exit, st.Reason = &e, c.exitErr.Reason
	case st.Permissions > 0:
		st.State = StateAwaitingApproval
	case st.Running > 0:
		st.State = StateRunning
	default:
		st.State = StateIdle
	}
	return st
}

// State reports what the session is doing.
func (s *Session) State() State {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.exitErr != nil:
		return StateDead
	case s.turn == nil:
		return StateIdle
	}
	for _, p := range c.perms {
		if p.req.SessionID == s.id {
			return StateAwaitingApproval
		}
	}
	return StateRunning
}
