package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/places"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// agentSessions lists this serve's live sessions (FR-10.1); with all,
// also its ended ones and the sessions of the team's other instances,
// each with its instance and the pid of the serve that runs it.
func (e *Env) agentSessions(_ context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_sessions", "all"); err != nil {
		return nil, err
	}
	all, _, err := c.Args.Bool("all")
	if err != nil {
		return nil, err
	}
	views := []SessionRow{}
	var lines []string
	now := e.cfg.Now()
	rows := []session.View{}
	hidden := 0
	worktrees := map[string]*WorktreeView{}
	for _, s := range e.m.Sessions() {
		v := s.View()
		if !all && v.ServePID == nil {
			hidden++
			continue
		}
		rows = append(rows, v)
		worktrees[v.AgentID] = worktreeOf(s)
	}
	if all {
		rows = append(rows, e.m.Absent().Elsewhere()...)
	}
	for _, sv := range rows {
		v := SessionRow{View: sv, Tasks: e.tasks.sessionTasks(sv.AgentID, now), Worktree: worktrees[sv.AgentID]}
		views = append(views, v)
		thread := "-"
		if v.BackendID != nil {
			thread = *v.BackendID
		}
		line := fmt.Sprintf("%s  %-16s %-11s %-6s agent=%s thread=%v", v.AgentID, v.Identity, v.Status, v.ThreadState, v.Backend, thread)
		if v.Host != "" {
			line += " host=" + v.Host
		}
		if all {
			line += " instance=" + v.Instance
			if v.ServePID != nil {
				line += fmt.Sprintf(" serve_pid=%d", *v.ServePID)
			}
			line += fmt.Sprintf(" resumable=%v", v.Resumable)
		}
		for _, tk := range v.Tasks {
			line += fmt.Sprintf(" task=%s(%s)", tk.TaskID, tk.Status)
		}
		if w := v.Worktree; w != nil {
			line += " worktree=" + w.Path + " branch=" + w.Branch
			if w.Released != "" {
				line += " (" + w.Released + ")"
			}
		}
		lines = append(lines, line)
	}
	text := fmt.Sprintf("%d session(s)", len(views))
	if !all {
		text += ", this serve's live ones"
		if hidden > 0 {
			text += fmt.Sprintf(" (%d ended, closed, stale or interrupted, not shown: agent_sessions {\"all\": true} lists them and the team's other serves' sessions)", hidden)
		}
	}
	if len(lines) > 0 {
		text += "\n" + strings.Join(lines, "\n")
	}
	return &mcpconn.ToolResult{Text: text, Structured: map[string]any{"sessions": views}}, nil
}

// ServerStatus is agent_status without an agent_id: the child, the team,
// the live sessions and the event and mail counters. Its fields are in the
// order of their JSON names.
type ServerStatus struct {
	ActiveSessions int                    `json:"active_sessions"`
	Agents         map[string]AgentStatus `json:"agents,omitempty"`
	Child          ChildStatus            `json:"child"`
	ConfigWarnings []string               `json:"config_warnings,omitempty"`
	Elicitation    bool                   `json:"elicitation"`
	Events         ServerEvents           `json:"events"`
	// Hosts are the machines other than this one where agents run, by
	// name: whether serve's ssh connection to each is up, what ssh said
	// when it is not, and the live sessions there.
	Hosts                map[string]HostStatus `json:"hosts,omitempty"`
	Identities           map[string]string     `json:"identities"`
	InstanceIdentity     string                `json:"instance_identity"`
	LeadMail             *LeadMail             `json:"lead_mail,omitempty"`
	MaxConcurrentThreads int                   `json:"max_concurrent_threads"`
	Notices              []string              `json:"notices,omitempty"`
	// Overlaps are the files that two live isolated agents both change
	// (the conflict radar, as of their last ended turns).
	Overlaps    []places.Overlap `json:"overlaps,omitempty"`
	PendingMail int              `json:"pending_mail"`
	Team        string           `json:"team"`
	// TeamBudget is the team's token budget and its use; nil without one.
	TeamBudget *session.BudgetState `json:"team_budget,omitempty"`
	// TeamTokenUsage is the team's: every session of the team in every
	// serve, closed ones included (the other serves' as their records
	// say); nil when no agent reported any.
	TeamTokenUsage *backend.Usage `json:"team_token_usage,omitempty"`
	// TokenUsage is the tokens (and cost) of every session of this serve,
	// live or closed, added up; nil when no agent reported any.
	TokenUsage *backend.Usage `json:"token_usage,omitempty"`
	UptimeSecs int            `json:"uptime_secs"`
}

// LeadMail is the path that mail for the client's own identity (the lead)
// takes: pushed into the Claude Code session through its messaging socket
// ("socket"), or left in the inbox for atm_read ("inbox", with the reason).
type LeadMail struct {
	Identity  string     `json:"identity"`
	Path      string     `json:"path"`             // socket or inbox
	Reason    string     `json:"reason,omitempty"` // why inbox, or why pushes fail
	Socket    string     `json:"socket,omitempty"`
	Pushed    int        `json:"pushed"`   // messages the socket took
	Batches   int        `json:"batches"`  // pushes that succeeded
	Failures  int        `json:"failures"` // pushes that failed (their mail stayed unread)
	Pending   int        `json:"pending"`  // unread mail for the lead at the last check
	LastPush  *time.Time `json:"last_push,omitempty"`
	LastError string     `json:"last_error,omitempty"`
}

// ChildStatus is the Codex child in ServerStatus.
type ChildStatus struct {
	RestartCounts
	Alive    bool    `json:"alive"`
	Backend  string  `json:"backend"`
	Exit     *string `json:"exit,omitempty"`
	ExitCode *int    `json:"exit_code,omitempty"`
	PID      int     `json:"pid"`
	Signal   *string `json:"signal,omitempty"`
	Started  bool    `json:"started"`
	Version  string  `json:"version"`
}

// AgentStatus is one agent kind other than Codex in ServerStatus: whether
// one of its processes runs (each session has its own), the last one
// started, and how the last one that died ended.
type AgentStatus struct {
	Alive    bool    `json:"alive"`
	Exit     *string `json:"exit,omitempty"`
	PID      int     `json:"pid"`
	Sessions int     `json:"sessions"` // live sessions of this kind
	Started  bool    `json:"started"`
	Version  string  `json:"version"`
}

// ServerEvents are the event counters of ServerStatus.
type ServerEvents struct {
	Dropped      int64 `json:"dropped"`
	DroppedTotal int64 `json:"dropped_total"`
	Forwarded    int64 `json:"forwarded"`
}

// agentStatus reports one session (agent_id) or the proxy.
func (e *Env) agentStatus(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_status", "agent_id", "offset"); err != nil {
		return nil, err
	}
	agentID, err := c.Args.Str("agent_id")
	if err != nil {
		return nil, err
	}
	offset, _, err := c.Args.Int("offset")
	if err != nil {
		return nil, err
	}
	if agentID != "" {
		s := e.m.Get(agentID)
		if s == nil {
			if err := e.m.Absent().Discarded(agentID); err != nil {
				return nil, err // its first turn failed: say so and why
			}
			return nil, proxyerr.New(proxyerr.ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q", agentID)
		}
		d := SessionDetail{Detail: s.Detail(offset), Tasks: e.tasks.sessionTasks(agentID, e.cfg.Now()), Worktree: worktreeOf(s)}
		return &mcpconn.ToolResult{Text: jsonText(d), Structured: d}, nil
	}
	st := e.cfg.Child.Status()
	child := ChildStatus{Backend: st.Protocol, Started: st.Started, Alive: st.Running, PID: st.PID, Version: st.Version}
	if e.cfg.Restarter != nil {
		child.RestartCounts = e.cfg.Restarter.Restarts()
	}
	if st.Exit != nil {
		code, exit := st.Exit.Code, st.Exit.String()
		child.ExitCode, child.Exit = &code, &exit
		if st.Exit.Signal != "" {
			sig := st.Exit.Signal
			child.Signal = &sig
		}
	}
	v := ServerStatus{Child: child, ConfigWarnings: e.cfg.ConfigWarnings, Notices: e.cfg.Notices, Team: e.cfg.Team, InstanceIdentity: e.cfg.Identity,
		UptimeSecs: int(e.cfg.Now().Sub(e.cfg.Started).Seconds()), Identities: map[string]string{},
		Elicitation: c.Elicitation, MaxConcurrentThreads: e.cfg.MaxSessions}
	if len(e.cfg.Agents) > 0 {
		v.Agents = map[string]AgentStatus{}
		for kind, b := range e.cfg.Agents {
			st := b.Status()
			as := AgentStatus{Started: st.Started, Alive: st.Running, PID: st.PID, Version: st.Version}
			if st.Exit != nil {
				exit := st.Exit.String()
				as.Exit = &exit
			}
			v.Agents[kind] = as
		}
	}
	for _, s := range e.m.Sessions() {
		if u := s.Usage(); u != nil {
			total := *u
			if v.TokenUsage != nil {
				total = v.TokenUsage.Add(*u)
			}
			total.ContextTokens, total.ContextWindow = 0, 0 // a context is one session's
			v.TokenUsage = &total
		}
	}
	if e.cfg.Hosts != nil {
		v.Hosts = e.cfg.Hosts()
	}
	if team := e.m.TeamBudgets().Usage(); !team.IsZero() {
		team.ContextTokens, team.ContextWindow = 0, 0 // a context is one session's
		v.TeamTokenUsage = &team
	}
	v.TeamBudget = e.m.TeamBudgets().State()
	live := e.m.Live()
	v.ActiveSessions = len(live)
	for id, s := range live {
		v.Identities[id] = s.Record().AgentID
		if hs, ok := v.Hosts[s.Record().Host]; ok {
			hs.Sessions++
			v.Hosts[s.Record().Host] = hs
		}
		if as, ok := v.Agents[s.Record().Backend]; ok {
			as.Sessions++
			v.Agents[s.Record().Backend] = as
		}
		d := s.Counts()
		v.Events.Dropped += d.Dropped
		v.Events.Forwarded += d.Forwarded
		if n, err := e.cfg.ATM.Pending(ctx, e.cfg.Team, id); err == nil {
			v.PendingMail += n
		}
	}
	v.Events.DroppedTotal = e.cfg.Client.Stats().Dropped
	if e.cfg.LeadMail != nil {
		lm := e.cfg.LeadMail()
		v.LeadMail = &lm
	}
	if e.cfg.Places != nil {
		v.Overlaps = e.cfg.Places.Overlaps()
	}
	return &mcpconn.ToolResult{Text: jsonText(v), Structured: v}, nil
}

// agentClose closes a session by agent_id or identity (FR-17.3): at once,
// without a model turn; with summary set, the agent is then asked for a
// summary (one more turn), kept for a resume that cannot continue its
// thread.
func (e *Env) agentClose(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	a := c.Args
	if err := a.CheckUnknown("agent_close", "agent_id", "identity", "summary"); err != nil {
		return nil, err
	}
	summary, _, err := a.Bool("summary")
	if err != nil {
		return nil, err
	}
	agentID, err := a.Str("agent_id")
	if err != nil {
		return nil, err
	}
	identity, err := a.Str("identity")
	if err != nil {
		return nil, err
	}
	var s *session.Session
	switch {
	case agentID != "":
		if s = e.m.Get(agentID); s == nil {
			return nil, proxyerr.New(proxyerr.ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q", agentID)
		}
		if err := sameIdentity(agentID, s.Record().Identity, identity); err != nil {
			return nil, err
		}
	case identity != "":
		if s = e.m.ByIdentity(identity); s == nil {
			return nil, proxyerr.New(proxyerr.ErrSessionNotFound, map[string]any{"identity": identity}, "no live session with identity %q", identity)
		}
	default:
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "agent_id"}, "agent_close needs agent_id or identity")
	}
	out := e.m.Close(ctx, s, summary)
	v := map[string]any{"agent_id": out.Record.AgentID, "identity": out.Record.Identity, "status": string(out.Record.Status),
		"summary_saved": out.SummarySaved, "already_closed": out.Already, "thread_id": out.Record.BackendID}
	if out.Usage != nil {
		v["token_usage"] = out.Usage
	}
	text := fmt.Sprintf("session %s (%s) is %s", out.Record.AgentID, out.Record.Identity, out.Record.Status)
	switch {
	case out.Already:
		text += " (it was already closed)"
	case out.Record.BackendID != "":
		text += fmt.Sprintf("; codex (or agent_start) with agent_id %s continues its thread %s later", out.Record.AgentID, out.Record.BackendID)
	}
	if summary && !out.Already {
		text += map[bool]string{true: "; its summary is saved", false: "; no summary could be had"}[out.SummarySaved]
	}
	if r := out.Released; r != nil {
		text += "; " + r.String()
		w := map[string]any{"path": r.Path, "branch": r.Branch, "removed": r.Removed, "ahead": r.Ahead, "dirty": r.Dirty}
		if r.Stat != "" {
			w["stat"] = r.Stat
		}
		v["worktree"] = w
	}
	return &mcpconn.ToolResult{Text: text, Structured: v}, nil
}

// maxWait caps agent_wait's timeout_secs.
const maxWait = 300 * time.Second

// agentWait waits for the running turn of a session to end and returns its
// result, or the current status when timeout_secs pass first (default 50 s,
// below common client timeouts). Progress goes to the client's token while
// it waits.
func (e *Env) agentWait(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_wait", "agent_id", "timeout_secs"); err != nil {
		return nil, err
	}
	s, err := e.lookup(c.Args)
	if err != nil {
		return nil, err
	}
	secs, set, err := c.Args.Int("timeout_secs")
	if err != nil {
		return nil, err
	}
	wait := 50 * time.Second
	if set {
		if secs < 0 {
			return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "timeout_secs"}, "argument \"timeout_secs\" must not be negative")
		}
		wait = min(time.Duration(secs)*time.Second, maxWait)
	}
	finished, err := s.Wait(ctx, wait, c.Progress.Send)
	if err != nil {
		return nil, err
	}
	d := s.Detail(0)
	d.Done = &finished
	text := jsonText(d)
	switch {
	case !finished:
		text = fmt.Sprintf("still %s after %s; call agent_wait again or agent_status\n%s", d.Status, wait, text)
	case d.LastResult != nil && d.LastResult.Content != nil:
		text = *d.LastResult.Content
	}
	return &mcpconn.ToolResult{Text: text, Structured: d}, nil
}

// agentInterrupt interrupts the running turn of a session; the session
// becomes interrupted and can be continued. On mcp-server the next turn
// runs on a fresh thread, seeded with the agent's recent messages, because
// the interrupted thread may deliver stray results
// (docs/codex-wire.md#stale-listener).
func (e *Env) agentInterrupt(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_interrupt", "agent_id"); err != nil {
		return nil, err
	}
	s, err := e.lookup(c.Args)
	if err != nil {
		return nil, err
	}
	interrupted, err := s.Interrupt(ctx)
	if err != nil {
		return nil, err
	}
	d := s.Detail(0)
	d.Interrupted = &interrupted
	if !interrupted {
		return &mcpconn.ToolResult{Text: "nothing to interrupt: the session is " + d.Status, Structured: d}, nil
	}
	return &mcpconn.ToolResult{Text: "interrupted; continue with " + e.replyTool(d.Backend), Structured: d}, nil
}

// agentRespond answers a pending approval (approval_fallback "queue", or
// instead of the client's elicitation): approve, approve_for_session, deny,
// or "deny: <reason>".
func (e *Env) agentRespond(_ context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_respond", "agent_id", "approval_id", "answer", "reason"); err != nil {
		return nil, err
	}
	s, err := e.lookup(c.Args)
	if err != nil {
		return nil, err
	}
	var id, ans, reason string
	for _, arg := range []struct {
		name string
		v    *string
	}{{"approval_id", &id}, {"answer", &ans}, {"reason", &reason}} {
		if *arg.v, err = c.Args.Str(arg.name); err != nil {
			return nil, err
		}
	}
	d, err := session.ParseAnswer(ans, reason)
	if err != nil {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "answer"}, "%v", err)
	}
	id, err = s.Respond(id, d)
	if err != nil {
		return nil, err
	}
	v := map[string]any{"agent_id": s.Record().AgentID, "approval_id": id, "decision": string(d.Kind), "reason": d.Reason}
	return &mcpconn.ToolResult{Text: fmt.Sprintf("approval %s: %s", id, d.Kind), Structured: v}, nil
}

// restartCodex starts a new Codex child in place of a crashed one (or of a
// running one, with force): every live session continues on it (its next
// turn resumes its thread on app-server, opens a new one with its recent
// messages on mcp-server). Turns that were in flight keep their error.
// Calls made while a restart runs wait for it and return its result: one
// new child, however many calls (the Restarter coalesces them).
func (e *Env) restartCodex(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_restart_codex", "force"); err != nil {
		return nil, err
	}
	force, _, err := c.Args.Bool("force")
	if err != nil {
		return nil, err
	}
	if e.cfg.Restarter == nil {
		return nil, proxyerr.New(proxyerr.ErrInvalidRequest, nil, "this proxy cannot restart Codex; restart the MCP server")
	}
	rep, err := e.cfg.Restarter.Restart(ctx, force)
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("Codex restarted (%s, pid %d; previous child: %s); %d live session(s) continue on it: continue each with codex-reply.",
		rep.Backend, rep.PID, rep.Previous, rep.Sessions)
	return &mcpconn.ToolResult{Text: text, Structured: rep}, nil
}
