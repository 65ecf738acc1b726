package session

import (
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Observer is told that a session changed: an event was recorded, a turn
// started or ended, an approval was listed or answered, the session was
// created, resumed or closed. It is what publishes the sessions' states
// (package feed). SessionChanged runs on the backend's reader and on the
// Manager's goroutines, with no lock of this package held: it must not
// block, and reads what it needs later (Session.State).
type Observer interface {
	SessionChanged(s *Session)
}

// changed tells the observer that s changed; no lock of s is held.
func (s *Session) changed() {
	if o := s.m.cfg.Observer; o != nil {
		o.SessionChanged(s)
	}
}

// State is a session as a live view shows it: who it is, what it does now
// and since when, what it has cost, what it waits for. Status is
// agent_status's (busy, awaiting_approval, idle, interrupted, error,
// closed).
type State struct {
	Record   registry.Session
	Status   string
	Model    string
	AutoMail bool
	Turns    int
	Queued   int
	// Usage is priced where its model has a price (price.go).
	Usage *backend.Usage
	// Budget is the session's token budget and its use; nil when it has
	// none (budget.go).
	Budget    *BudgetState
	Approvals []ApprovalState
	// TurnStarted is when the running turn started (zero when none runs).
	TurnStarted time.Time
	// Item is the running turn's current item: the last one still running
	// (nil when none: the model thinks, or no turn runs).
	Item *ItemState
	// Messages are the agent's last messages, oldest first.
	Messages []string
	// Events are the last events, oldest first.
	Events []EventState
	// Last is how the last turn ended (nil before any).
	Last *LastResult
	// Problem is the running turn's last error or retry notice.
	Problem *Problem
	// SubAgents are the agent's own sub-agents (Codex collab), by thread.
	SubAgents []backend.SubAgent
	// UnreadMail is the mail layer's count of unread mail for the
	// session's identity (0 without a mail layer).
	UnreadMail int
}

// ItemState is an item of the running turn and when it began.
type ItemState struct {
	Type    string
	Summary string
	Status  string
	Since   time.Time
}

// EventState is one recorded event.
type EventState struct {
	Time    time.Time
	Type    string
	Summary string
}

// ApprovalState is a pending approval: its view and the full question.
type ApprovalState struct {
	ApprovalView
	Created time.Time
}

// State returns the session as a live view shows it; events caps the
// recent events (0: none).
func (s *Session) State(events int) State {
	s.mu.Lock()
	st := State{Record: s.rec, Status: s.statusLocked(), Model: s.modelLocked(), AutoMail: s.autoMail, Turns: s.rec.Turns,
		Queued: len(s.queue), Usage: s.usageLocked(), Budget: s.budgetLocked(), Problem: s.act.problem}
	if s.running != nil {
		st.TurnStarted = s.turnStarted
		for i := len(s.act.items) - 1; i >= 0; i-- {
			if it := s.act.items[i]; it.Status == "running" || it.Status == "inProgress" || it.Status == "pending" {
				st.Item = &ItemState{Type: it.Type, Summary: it.Summary, Status: it.Status, Since: it.since}
				break
			}
		}
	}
	for _, p := range s.approvals {
		st.Approvals = append(st.Approvals, ApprovalState{ApprovalView: p.view(), Created: p.created})
	}
	st.Messages = append([]string(nil), s.act.messages...)
	if events > 0 {
		for _, e := range s.act.events(events) {
			st.Events = append(st.Events, EventState(e))
		}
	}
	if o := s.last; o != nil {
		last := &LastResult{Status: o.status, FinishedAt: o.finished.UTC().Format(time.RFC3339Nano)}
		if o.err != nil {
			last.Error = o.err.Error()
		} else {
			text, isErr := o.text, o.isError
			last.Content, last.IsError = &text, &isErr
		}
		st.Last = last
	}
	st.SubAgents = s.act.subAgentList()
	identity, live := s.rec.Identity, s.rec.Status.Live()
	s.mu.Unlock()
	if s.m.cfg.Mail != nil && live {
		st.UnreadMail = s.m.cfg.Mail.Stats(identity).Pending
	}
	return st
}
