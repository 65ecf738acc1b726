package proxy

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// sessionView is one session as agent_sessions reports it (FR-10.1).
func (s *Server) sessionView(sess *session) map[string]any {
	sess.mu.Lock()
	rec := sess.rec
	turns := sess.turns
	sess.mu.Unlock()
	v := map[string]any{
		"agent_id": rec.AgentID, "backend": firstNonEmpty(rec.Backend, "codex"), "backend_id": nullable(rec.BackendID),
		"team": rec.Team, "identity": rec.Identity, "status": string(rec.Status), "thread_state": string(rec.ThreadState),
		"last_active_at": rec.LastActive.UTC().Format(time.RFC3339), "started_at": rec.StartedAt.UTC().Format(time.RFC3339),
		"tag": nullable(rec.Tag), "role": nullable(rec.Role), "cwd": rec.Cwd,
		"repo_name": nullable(rec.RepoName), "repo_root": nullable(rec.RepoRoot), "branch": nullable(rec.Branch),
		"agent_source": nullable(rec.AgentSource), "agent_name": nil, "turns": turns,
		"resumable":   !rec.Status.Live(),
		"has_summary": rec.BackendID != "" && s.reg.Dir().HasSummary(rec.Identity, rec.BackendID),
	}
	if rec.AgentSource != "" {
		v["agent_name"] = strings.TrimSuffix(filepath.Base(rec.AgentSource), filepath.Ext(rec.AgentSource))
	}
	return v
}

func nullable(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// sortedSessions returns every known session, live ones first, then by
// last activity (newest first).
func (s *Server) sortedSessions() []*session {
	s.smu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		all = append(all, sess)
	}
	s.smu.Unlock()
	recs := make(map[*session]registry.Session, len(all))
	for _, sess := range all {
		recs[sess] = sess.snapshot()
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := recs[all[i]], recs[all[j]]
		if a.Status.Live() != b.Status.Live() {
			return a.Status.Live()
		}
		return a.LastActive.After(b.LastActive)
	})
	return all
}

func (s *Server) toolAgentSessions(_ context.Context, c *toolCall) (*toolResult, error) {
	if err := c.args.checkUnknown("agent_sessions"); err != nil {
		return nil, err
	}
	views := []map[string]any{}
	var lines []string
	for _, sess := range s.sortedSessions() {
		v := s.sessionView(sess)
		views = append(views, v)
		lines = append(lines, fmt.Sprintf("%s  %-16s %-11s %-6s thread=%v", v["agent_id"], v["identity"], v["status"], v["thread_state"], orDash(v["backend_id"])))
	}
	text := fmt.Sprintf("%d session(s)", len(views))
	if len(lines) > 0 {
		text += "\n" + strings.Join(lines, "\n")
	}
	return &toolResult{Text: text, Structured: map[string]any{"sessions": views}}, nil
}

func orDash(v any) any {
	if v == nil {
		return "-"
	}
	return v
}

func (s *Server) toolAgentStatus(ctx context.Context, c *toolCall) (*toolResult, error) {
	if err := c.args.checkUnknown("agent_status", "agent_id", "offset"); err != nil {
		return nil, err
	}
	agentID, err := c.args.str("agent_id")
	if err != nil {
		return nil, err
	}
	offset, _, err := c.args.integer("offset")
	if err != nil {
		return nil, err
	}
	if agentID != "" {
		s.smu.Lock()
		sess := s.sessions[agentID]
		s.smu.Unlock()
		if sess == nil {
			return nil, newError(ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q", agentID)
		}
		v := s.sessionDetail(ctx, sess, offset)
		return &toolResult{Text: jsonText(v), Structured: v}, nil
	}
	st := s.backend.Status()
	child := map[string]any{"backend": string(s.backend.Kind()), "started": st.Started, "alive": st.Running, "pid": st.PID, "version": st.Version}
	if st.Exit != nil {
		child["exit_code"] = st.Exit.Code
		if st.Exit.Signal != "" {
			child["signal"] = st.Exit.Signal
		}
		child["exit"] = st.Exit.String()
	}
	identities := map[string]string{}
	pending := 0
	var dropped, forwarded int64
	s.smu.Lock()
	live := make([]*session, 0, len(s.byIdentity))
	for id, sess := range s.byIdentity {
		identities[id] = sess.agentID()
		live = append(live, sess)
	}
	s.smu.Unlock()
	for _, sess := range live {
		dropped += sess.counters.dropped.Load()
		forwarded += sess.counters.forwarded.Load()
		if n, err := s.atm.Pending(ctx, s.opts.Team, sess.identity()); err == nil {
			pending += n
		}
	}
	v := map[string]any{
		"child": child, "team": s.opts.Team, "instance_identity": s.opts.Identity,
		"uptime_secs": int(s.now().Sub(s.started).Seconds()), "active_sessions": len(live),
		"identities": identities, "pending_mail": pending,
		"events":      map[string]any{"forwarded": forwarded, "dropped": dropped, "dropped_total": s.client.dropped.Load()},
		"elicitation": s.client.elicitation.Load(), "max_concurrent_threads": s.opts.MaxSessions,
	}
	return &toolResult{Text: jsonText(v), Structured: v}, nil
}

// sessionDetail is agent_status for one session: its status, last result,
// recent agent messages, the items of the current turn, token usage,
// pending approvals and event counters; offset pages through a long result.
func (s *Server) sessionDetail(ctx context.Context, sess *session, offset int) map[string]any {
	v := s.sessionView(sess)
	sess.mu.Lock()
	v["status"] = sess.statusLocked()
	v["registry_status"] = string(sess.rec.Status)
	v["busy"] = sess.running != nil
	v["queued"] = len(sess.queue)
	v["auto_mail"] = sess.autoMail
	v["turns"] = sess.turns
	var approvals []map[string]any
	for _, p := range sess.approvals {
		approvals = append(approvals, p.view())
	}
	if approvals == nil {
		approvals = []map[string]any{}
	}
	v["pending_approvals"] = approvals
	v["agent_messages"] = append([]string{}, sess.act.messages...)
	items := make([]turnItem, 0, len(sess.act.items))
	for _, it := range sess.act.items {
		items = append(items, *it)
	}
	v["current_turn_items"] = items
	if len(sess.act.tokens) > 0 {
		v["token_usage"] = sess.act.tokens
	}
	v["recent_events"] = sess.act.events(20)
	if o := sess.last; o != nil {
		last := map[string]any{"status": o.status, "finished_at": o.finished.UTC().Format(time.RFC3339Nano)}
		if o.err != nil {
			last["error"] = o.err.Error()
		} else {
			last["content"] = o.text
			last["is_error"] = o.isError
		}
		v["last_result"] = last
		if offset > 0 || len([]rune(sess.fullResult)) > s.maxResultChars() {
			r := []rune(sess.fullResult)
			from := min(max(offset, 0), len(r))
			to := min(from+s.maxResultChars(), len(r))
			v["result_text"] = string(r[from:to])
			v["result_offset"] = from
			v["result_total_chars"] = len(r)
			v["result_more"] = to < len(r)
		}
	}
	identity := sess.rec.Identity
	live := sess.rec.Status.Live()
	sess.mu.Unlock()
	v["events"] = map[string]any{"forwarded": sess.counters.forwarded.Load(), "dropped": sess.counters.dropped.Load()}
	if s.mail != nil && live {
		st := s.mail.Stats(identity)
		mail := map[string]any{"auto_mail": st.AutoMail, "polling": st.Polling, "delivered": st.Delivered, "batches": st.Batches,
			"pending": st.Pending, "in_flight": st.InFlight}
		if !st.LastDelivery.IsZero() {
			mail["last_delivery"] = st.LastDelivery.UTC().Format(time.RFC3339Nano)
		}
		if st.LastError != "" {
			mail["last_error"] = st.LastError
		}
		v["mail"] = mail
	}
	return v
}

func (s *Server) toolAgentClose(ctx context.Context, c *toolCall) (*toolResult, error) {
	a := c.args
	if err := a.checkUnknown("agent_close", "agent_id", "identity"); err != nil {
		return nil, err
	}
	agentID, err := a.str("agent_id")
	if err != nil {
		return nil, err
	}
	identity, err := a.str("identity")
	if err != nil {
		return nil, err
	}
	if agentID == "" && identity == "" {
		return nil, newError(ErrInvalidParams, map[string]any{"argument": "agent_id"}, "agent_close needs agent_id or identity")
	}
	var sess *session
	s.smu.Lock()
	switch {
	case agentID != "":
		sess = s.sessions[agentID]
	case identity != "":
		sess = s.byIdentity[identity]
	}
	s.smu.Unlock()
	if sess == nil {
		if agentID != "" {
			return nil, newError(ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q", agentID)
		}
		return nil, newError(ErrSessionNotFound, map[string]any{"identity": identity}, "no live session with identity %q", identity)
	}
	out, err := s.closeSession(ctx, sess, false)
	if err != nil {
		return nil, err
	}
	v := map[string]any{"agent_id": out.rec.AgentID, "identity": out.rec.Identity, "status": string(out.rec.Status),
		"summary_saved": out.summarySaved, "already_closed": out.already}
	text := fmt.Sprintf("session %s (%s) is %s", out.rec.AgentID, out.rec.Identity, out.rec.Status)
	if out.already {
		text += " (it was already closed)"
	}
	return &toolResult{Text: text, Structured: v}, nil
}
