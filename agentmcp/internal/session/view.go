package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// View is a session as agent_sessions lists it (FR-10.1). Its fields are in
// the order of their JSON names, as a map of them would be written.
type View struct {
	AgentID     string  `json:"agent_id"`
	AgentName   *string `json:"agent_name"`
	AgentSource *string `json:"agent_source"`
	Backend     string  `json:"backend"`
	BackendID   *string `json:"backend_id"`
	Branch      *string `json:"branch"`
	// Budget is the session's token budget and its use; nil without one.
	Budget *BudgetState `json:"budget,omitempty"`
	Cwd    string       `json:"cwd"`
	// ForkedFrom is the session this one was forked from (agent_fork),
	// and how it got that one's history; nil for a session of its own.
	ForkedFrom *registry.Fork `json:"forked_from,omitempty"`
	HasSummary bool           `json:"has_summary"`
	// Host is the host the session's agent runs on (over ssh); left out
	// for this machine.
	Host     string `json:"host,omitempty"`
	Identity string `json:"identity"`
	// Instance is the proxy instance whose registry holds the session:
	// this serve's, or another's of the team (agent_sessions with all).
	Instance     string `json:"instance"`
	LastActiveAt string `json:"last_active_at"`
	// Model is the model the agent said it runs, else the one it was
	// started with ("" when neither is known).
	Model    string  `json:"model,omitempty"`
	RepoName *string `json:"repo_name"`
	RepoRoot *string `json:"repo_root"`
	// Resumable: the session's thread can be taken up by its agent_id
	// from this serve: codex-reply while it is live here, codex (or
	// agent_start) with its agent_id once it has ended. It stays true when
	// this serve ends and a later one lists the session stale. False for a
	// session without a thread, one whose identity another live session
	// holds, and one that another serve's registry holds.
	Resumable bool    `json:"resumable"`
	Role      *string `json:"role"`
	// ServePID is the pid of the serve that runs the session, nil when no
	// serve runs it (it ended, or its serve is gone).
	ServePID    *int    `json:"serve_pid"`
	StartedAt   string  `json:"started_at"`
	Status      string  `json:"status"`
	Tag         *string `json:"tag"`
	Team        string  `json:"team"`
	ThreadState string  `json:"thread_state"`
	// TokenUsage is the session's token usage so far, over its threads,
	// in the one shape of every agent kind; nil before the agent reported
	// any.
	TokenUsage *backend.Usage `json:"token_usage,omitempty"`
	Turns      int            `json:"turns"`
}

// Detail is one session as agent_status shows it: the View's facts, its
// status (busy, awaiting_approval, idle, interrupted, error or closed), the
// last result, recent agent messages, the current turn's items, token
// usage, pending approvals, event and mail counters. Fields are in the
// order of their JSON names.
type Detail struct {
	AgentID          string         `json:"agent_id"`
	AgentMessages    []string       `json:"agent_messages"`
	AgentName        *string        `json:"agent_name"`
	AgentSource      *string        `json:"agent_source"`
	AutoMail         bool           `json:"auto_mail"`
	Backend          string         `json:"backend"`
	BackendID        *string        `json:"backend_id"`
	Branch           *string        `json:"branch"`
	Budget           *BudgetState   `json:"budget,omitempty"`
	Busy             bool           `json:"busy"`
	CodexProblem     *Problem       `json:"codex_problem,omitempty"` // the turn's last error or retry notice from Codex
	CurrentTurnItems []turnItem     `json:"current_turn_items"`
	Cwd              string         `json:"cwd"`
	Done             *bool          `json:"done,omitempty"` // agent_wait: whether the turn ended
	Events           EventCounts    `json:"events"`
	ForkedFrom       *registry.Fork `json:"forked_from,omitempty"`
	HasSummary       bool           `json:"has_summary"`
	Host             string         `json:"host,omitempty"`
	Identity         string         `json:"identity"`
	Interrupted      *bool          `json:"interrupted,omitempty"` // agent_interrupt: whether a turn was interrupted
	LastActiveAt     string         `json:"last_active_at"`
	LastResult       *LastResult    `json:"last_result,omitempty"`
	Mail             *MailView      `json:"mail,omitempty"`
	Model            string         `json:"model,omitempty"`
	PendingApprovals []ApprovalView `json:"pending_approvals"`
	Queued           int            `json:"queued"`
	RecentEvents     []eventRecord  `json:"recent_events"`
	RegistryStatus   string         `json:"registry_status"`
	RepoName         *string        `json:"repo_name"`
	RepoRoot         *string        `json:"repo_root"`
	ResultMore       *bool          `json:"result_more,omitempty"`
	ResultOffset     *int           `json:"result_offset,omitempty"`
	ResultText       *string        `json:"result_text,omitempty"`
	ResultTotalChars *int           `json:"result_total_chars,omitempty"`
	Resumable        bool           `json:"resumable"`
	Role             *string        `json:"role"`
	StartedAt        string         `json:"started_at"`
	Status           string         `json:"status"`
	// SubAgents are the agents the session's agent started of its own
	// (Codex's collab sub-agents: spawn_agent), each with its parent
	// thread, task and last state, by thread. They are not members of the
	// team: nobody mails them, and they are not sessions.
	SubAgents   []backend.SubAgent `json:"sub_agents,omitempty"`
	Tag         *string            `json:"tag"`
	Team        string             `json:"team"`
	ThreadState string             `json:"thread_state"`
	TokenUsage  *backend.Usage     `json:"token_usage,omitempty"`
	Turns       int                `json:"turns"`
}

// EventCounts are the events passed on to the client and dropped.
type EventCounts struct {
	Dropped   int64 `json:"dropped"`
	Forwarded int64 `json:"forwarded"`
}

// LastResult is how the last turn ended: its content, or the proxy error
// that ended it.
type LastResult struct {
	Content    *string `json:"content,omitempty"`
	Error      string  `json:"error,omitempty"`
	FinishedAt string  `json:"finished_at"`
	IsError    *bool   `json:"is_error,omitempty"`
	Status     string  `json:"status"`
	// Thread says whether the turn continued the session's thread (see
	// TurnResult.Thread).
	Thread *ThreadNote `json:"thread,omitempty"`
	// Output is the answer's JSON when the turn had an output schema and
	// the answer matched it; OutputError says why it did not
	// (TurnResult.Output).
	Output      json.RawMessage `json:"output,omitempty"`
	OutputError string          `json:"output_error,omitempty"`
	// SubAgentsNote says why the turn was reported done while sub-agents
	// it started still ran (TurnResult.SubAgentsNote).
	SubAgentsNote string `json:"sub_agents_note,omitempty"`
}

// ApprovalView is a pending approval as agent_status shows it.
type ApprovalView struct {
	ApprovalID string          `json:"approval_id"`
	Changes    json.RawMessage `json:"changes,omitempty"`
	Command    string          `json:"command"`
	Cwd        string          `json:"cwd"`
	Kind       string          `json:"kind"`
	Options    []string        `json:"options"`
	Question   string          `json:"question"`
	Reason     string          `json:"reason"`
	Since      string          `json:"since"`
}

// MailView is the mail layer's counters for the session's identity.
type MailView struct {
	AutoMail     bool   `json:"auto_mail"`
	Batches      int    `json:"batches"`
	Delivered    int    `json:"delivered"`
	InFlight     int    `json:"in_flight"`
	LastDelivery string `json:"last_delivery,omitempty"`
	LastError    string `json:"last_error,omitempty"`
	Pending      int    `json:"pending"`
	Polling      bool   `json:"polling"`
}

// View returns the session as agent_sessions lists it.
func (s *Session) View() View {
	s.mu.Lock()
	rec := s.rec
	usage, budget, model := s.usageLocked(), s.budgetLocked(), s.modelLocked()
	s.mu.Unlock()
	v := recordView(rec, rec.BackendID != "" && s.m.cfg.Registry.HasSummary(rec.Identity, rec.BackendID))
	if tr, ok := s.m.cfg.Registry.(teamRegistry); ok {
		v.Instance = tr.Identity()
	}
	if rec.Status.Live() {
		pid := os.Getpid()
		v.ServePID = &pid
	}
	v.Resumable = s.resumable(rec)
	v.TokenUsage, v.Budget, v.Model = usage, budget, model
	return v
}

// recordView is a registry record as agent_sessions lists it; Instance,
// ServePID and Resumable are the caller's to set.
func recordView(rec registry.Session, hasSummary bool) View {
	v := View{
		AgentID: rec.AgentID, Backend: rec.Kind(), BackendID: nullable(rec.BackendID),
		Team: rec.Team, Identity: rec.Identity, Status: string(rec.Status), ThreadState: string(rec.ThreadState),
		LastActiveAt: rec.LastActive.UTC().Format(time.RFC3339), StartedAt: rec.StartedAt.UTC().Format(time.RFC3339),
		Tag: nullable(rec.Tag), Role: nullable(rec.Role), Cwd: rec.Cwd,
		RepoName: nullable(rec.RepoName), RepoRoot: nullable(rec.RepoRoot), Branch: nullable(rec.Branch),
		AgentSource: nullable(rec.AgentSource), Turns: rec.Turns, HasSummary: hasSummary, Host: rec.Host, ForkedFrom: rec.ForkedFrom,
	}
	if rec.AgentSource != "" {
		v.AgentName = nullable(strings.TrimSuffix(filepath.Base(rec.AgentSource), filepath.Ext(rec.AgentSource)))
	}
	return v
}

// Detail returns the session as agent_status shows it; offset pages
// through a result longer than the cap.
func (s *Session) Detail(offset int) Detail {
	v := s.View()
	d := Detail{
		AgentID: v.AgentID, AgentName: v.AgentName, AgentSource: v.AgentSource, Backend: v.Backend, BackendID: v.BackendID,
		Branch: v.Branch, Cwd: v.Cwd, HasSummary: v.HasSummary, Host: v.Host, Identity: v.Identity, LastActiveAt: v.LastActiveAt,
		RepoName: v.RepoName, RepoRoot: v.RepoRoot, Resumable: v.Resumable, Role: v.Role, StartedAt: v.StartedAt,
		Tag: v.Tag, Team: v.Team, ThreadState: v.ThreadState, TokenUsage: v.TokenUsage, Budget: v.Budget, Model: v.Model, ForkedFrom: v.ForkedFrom,
	}
	max := s.m.cfg.MaxResultChars
	s.mu.Lock()
	d.Status = s.statusLocked()
	d.RegistryStatus = string(s.rec.Status)
	d.Busy = s.running != nil
	d.Queued = len(s.queue)
	d.AutoMail = s.autoMail
	d.Turns = s.rec.Turns
	d.PendingApprovals = []ApprovalView{}
	for _, p := range s.approvals {
		d.PendingApprovals = append(d.PendingApprovals, p.view())
	}
	d.AgentMessages = append([]string{}, s.act.messages...)
	d.CurrentTurnItems = make([]turnItem, 0, len(s.act.items))
	for _, it := range s.act.items {
		d.CurrentTurnItems = append(d.CurrentTurnItems, *it)
	}
	if p := s.act.problem; p != nil {
		cp := *p
		d.CodexProblem = &cp
	}
	d.RecentEvents = s.act.events(20)
	d.SubAgents = s.act.subAgentList()
	if o := s.last; o != nil {
		last := &LastResult{Status: o.status, FinishedAt: o.finished.UTC().Format(time.RFC3339Nano), Thread: o.thread,
			Output: o.output, OutputError: o.outputError, SubAgentsNote: o.subAgentsNote}
		if o.err != nil {
			last.Error = o.err.Error()
		} else {
			text, isErr := o.text, o.isError
			last.Content, last.IsError = &text, &isErr
		}
		d.LastResult = last
		if offset > 0 || len([]rune(s.fullResult)) > max {
			r := []rune(s.fullResult)
			from := min(max0(offset), len(r))
			to := min(from+max, len(r))
			text, more, total := string(r[from:to]), to < len(r), len(r)
			d.ResultText, d.ResultOffset, d.ResultTotalChars, d.ResultMore = &text, &from, &total, &more
		}
	}
	identity := s.rec.Identity
	live := s.rec.Status.Live()
	s.mu.Unlock()
	d.Events = EventCounts{Forwarded: s.forwarded.Load(), Dropped: s.dropped.Load()}
	if s.m.cfg.Mail != nil && live {
		st := s.m.cfg.Mail.Stats(identity)
		mv := &MailView{AutoMail: st.AutoMail, Polling: st.Polling, Delivered: st.Delivered, Batches: st.Batches,
			Pending: st.Pending, InFlight: st.InFlight, LastError: st.LastError}
		if !st.LastDelivery.IsZero() {
			mv.LastDelivery = st.LastDelivery.UTC().Format(time.RFC3339Nano)
		}
		d.Mail = mv
	}
	d.fit(max)
	return d
}

// fit keeps the detail's JSON within max characters (MaxResultChars): a
// client such as Claude Code shows the model the structuredContent, whole,
// and refuses a result over its limit. Older activity goes first (agent
// messages, then events and items, keeping the latest), then the page of
// the result shrinks (result_more and agent_status's offset read on), then
// the last result's content is clipped with a note saying how to read it
// whole.
func (d *Detail) fit(limit int) {
	for range 10000 {
		over := jsonLen(d) - limit
		if over <= 0 {
			return
		}
		switch {
		case len(d.AgentMessages) > 1:
			d.AgentMessages = d.AgentMessages[1:]
		case len(d.RecentEvents) > 3:
			d.RecentEvents = d.RecentEvents[1:]
		case len(d.CurrentTurnItems) > 3:
			d.CurrentTurnItems = d.CurrentTurnItems[1:]
		case len(d.AgentMessages) == 1 && Clip(d.AgentMessages[0], 200) != d.AgentMessages[0]:
			// Once clipped it stays so (its "…" makes it more than 200
			// bytes): the next step shrinks the result.
			d.AgentMessages[0] = Clip(d.AgentMessages[0], 200)
		case d.ResultText != nil && len([]rune(*d.ResultText)) > 200:
			r := []rune(*d.ResultText)
			keep := len(r) - over - 64
			if keep < 200 {
				keep = 200
			}
			text, more := string(r[:keep]), true
			d.ResultText, d.ResultMore = &text, &more
		case d.LastResult != nil && d.LastResult.Content != nil && len([]rune(*d.LastResult.Content)) > 400:
			r := []rune(*d.LastResult.Content)
			keep := max(len(r)-over-200, 200)
			text := string(r[:keep]) + fmt.Sprintf("\n[… %d more characters, cut to fit the result cap: read them with agent_status {agent_id, offset: %d}]", len(r)-keep, keep)
			d.LastResult.Content = &text
		default:
			return // what is left is small; nothing more to drop
		}
	}
}

// jsonLen is the length of v's JSON.
func jsonLen(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

func max0(n int) int { return max(n, 0) }

// statusLocked is the session's status for agent_status; s.mu is held.
func (s *Session) statusLocked() string {
	switch {
	case !s.rec.Status.Live():
		return "closed"
	case len(s.approvals) > 0:
		return "awaiting_approval"
	case s.running != nil:
		return "busy"
	case s.last != nil && s.last.status == "interrupted":
		return "interrupted"
	case s.last != nil && (s.last.err != nil || s.last.status == "failed"):
		return "error"
	}
	return "idle"
}

// view is the pending approval as agent_status shows it.
func (p *pending) view() ApprovalView {
	v := ApprovalView{
		ApprovalID: p.id, Kind: string(p.a.Kind), Question: p.question,
		Options: []string{"approve", "approve_for_session", "deny"}, Since: p.created.UTC().Format(time.RFC3339),
		Command: p.a.Command, Cwd: p.a.Cwd, Reason: p.a.Reason,
	}
	if len(p.a.Changes) > 0 {
		v.Changes = p.a.Changes
	}
	return v
}

// Counts returns the session's event counters.
func (s *Session) Counts() EventCounts {
	return EventCounts{Forwarded: s.forwarded.Load(), Dropped: s.dropped.Load()}
}

// Usage returns the session's token usage so far, over its threads and
// the serves that ran it, priced where its model has a price (nil before
// its agent reported any).
func (s *Session) Usage() *backend.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usageLocked()
}
