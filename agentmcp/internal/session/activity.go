package session

import (
	"sort"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// defaultEventRing is the per-session event ring size (agent_status).
const defaultEventRing = 500

// eventRecord is one event kept in the session's ring buffer.
type eventRecord struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Summary string    `json:"summary,omitempty"`
}

// turnItem is one item of the current turn: a command run, a file change
// or a tool call.
type turnItem struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"` // command, file_change, tool_call
	Status  string    `json:"status"`
	Summary string    `json:"summary"`
	since   time.Time // when the item began (a live view's "for how long")
}

// activity is what a session's events tell about it, for agent_status:
// a bounded ring of events, the recent agent messages, the items of the
// current turn and the token usage. It reads events only in the
// backend-neutral terms of backend.Activity: each backend translates
// its own dialect.
type activity struct {
	size     int
	ring     []eventRecord
	start    int // ring is circular once full
	messages []string
	items    []*turnItem
	usage    usageTotals
	// subAgents are the Codex agent's own sub-agents by thread, as its
	// collab items last told (not members of the team).
	subAgents map[string]backend.SubAgent
	// problem is the current turn's last error or retry notice from the
	// agent (its model unreachable, a stream error), nil when none.
	problem *Problem
	// model is the model the agent last said it runs (Activity.Model).
	model string
}

// Problem is the last error or retry notice the agent sent during a turn: why
// a turn is slow or failed, for agent_status and a timeout's error.
type Problem struct {
	Message  string    `json:"message"`
	At       time.Time `json:"at"`
	Retrying bool      `json:"retrying"` // the agent said it would retry
}

const maxAgentMessages = 20

func (a *activity) add(r eventRecord) {
	if a.size <= 0 {
		a.size = defaultEventRing
	}
	if len(a.ring) < a.size {
		a.ring = append(a.ring, r)
		return
	}
	a.ring[a.start] = r
	a.start = (a.start + 1) % a.size
}

// events returns the last n events, oldest first.
func (a *activity) events(n int) []eventRecord {
	all := append(append([]eventRecord{}, a.ring[a.start:]...), a.ring[:a.start]...)
	if n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

func (a *activity) item(id, typ string, now time.Time) *turnItem {
	for _, it := range a.items {
		if it.ID == id {
			return it
		}
	}
	it := &turnItem{ID: id, Type: typ, Status: "running", since: now}
	a.items = append(a.items, it)
	return it
}

func (a *activity) message(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	a.messages = append(a.messages, Clip(text, 2000))
	if len(a.messages) > maxAgentMessages {
		a.messages = a.messages[len(a.messages)-maxAgentMessages:]
	}
}

// record keeps what one event tells, in the backend-neutral terms of act
// (the event's backend.Event.Activity); typ is the event's type, the
// ring's label; thread is the thread it came from.
func (a *activity) record(typ, thread string, act backend.Activity, now time.Time) {
	r := eventRecord{Time: now, Type: typ, Summary: act.Summary}
	if act.Model != "" {
		a.model = act.Model
	}
	switch act.Kind {
	case backend.ActivityTurnStarted:
		a.items = nil
		a.problem = nil
	case backend.ActivityMessage:
		a.message(act.Text)
		if r.Summary == "" {
			r.Summary = Clip(act.Text, 120)
		}
	case backend.ActivityItem:
		if act.Item == nil {
			break
		}
		it := a.item(act.Item.ID, act.Item.Type, now)
		if act.Item.Summary != "" {
			it.Summary = act.Item.Summary
		}
		if act.Item.Status != "" {
			it.Status = act.Item.Status
		}
		if r.Summary == "" {
			r.Summary = it.Summary + ": " + it.Status
		}
		for _, sub := range act.SubAgents {
			if a.subAgents == nil {
				a.subAgents = map[string]backend.SubAgent{}
			}
			a.subAgents[sub.ThreadID] = sub
		}
	case backend.ActivityProblem:
		if r.Summary == "" {
			r.Summary = Clip(act.Text, 200)
		}
		a.problem = &Problem{Message: Clip(act.Text, 500), At: now, Retrying: act.Retrying}
	case backend.ActivityTokens:
		if act.Usage != nil {
			a.usage.report(thread, *act.Usage)
		}
	}
	a.add(r)
}

// subAgentList returns the sub-agents by thread id; nil when there are
// none.
func (a *activity) subAgentList() []backend.SubAgent {
	if len(a.subAgents) == 0 {
		return nil
	}
	out := make([]backend.SubAgent, 0, len(a.subAgents))
	for _, sub := range a.subAgents {
		out = append(out, sub)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ThreadID < out[j].ThreadID })
	return out
}

// usageTotals adds up a session's token usage over its threads: each
// backend reports a thread's totals so far (backend.Usage), and a
// session may run on several threads in turn (a fresh thread after an
// interrupt, a resume in a new process). A thread's totals that go down
// are a new count (a new process of the agent), added to what came
// before.
type usageTotals struct {
	done   backend.Usage // the threads (and counts) before the current one
	thread string
	cur    backend.Usage
	seen   bool
}

// report takes a thread's totals so far.
func (u *usageTotals) report(thread string, v backend.Usage) {
	if u.seen && (thread != u.thread || v.TotalTokens < u.cur.TotalTokens) {
		u.done = u.done.Add(u.cur)
	}
	u.thread, u.cur, u.seen = thread, v, true
}

// total is the session's usage so far, nil before any report.
func (u *usageTotals) total() *backend.Usage {
	if !u.seen {
		return nil
	}
	t := u.done.Add(u.cur)
	return &t
}
