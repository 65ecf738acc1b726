package proxy

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/rollout"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// turnOutcome is how a turn ended, kept in the session.
type turnOutcome struct {
	status   string // completed, failed, interrupted, error
	text     string // the result text (capped)
	isError  bool
	err      error // a proxy error (timeout, child dead)
	threadID string
	finished time.Time
}

// recordOutcome keeps the outcome of a turn and wakes agent_wait.
func (s *session) recordOutcome(o *turnOutcome, full string) {
	s.mu.Lock()
	s.last = o
	s.fullResult = full
	done := s.turnDone
	s.turnDone = make(chan struct{})
	s.mu.Unlock()
	close(done)
}

// statusLocked is the session's status for agent_status: busy,
// awaiting_approval, idle, interrupted, error or closed. s.mu is held.
func (s *session) statusLocked() string {
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

// maxResultChars is the result cap in characters.
func (s *Server) maxResultChars() int {
	if s.opts.MaxResultChars > 0 {
		return s.opts.MaxResultChars
	}
	return 80000
}

// capResult cuts a result text over the cap with a marker that says how to
// get the rest (agent_status with an offset).
func (s *Server) capResult(agentID, text string) string {
	n := s.maxResultChars()
	if len(text) <= n || utf8.RuneCountInString(text) <= n {
		return text // every turn's result: counted, not copied
	}
	r := []rune(text)
	return string(r[:n]) + fmt.Sprintf("\n\n[… truncated: %d of %d characters shown. Get the rest with agent_status "+
		"{\"agent_id\": %q, \"offset\": %d}.]", n, len(r), agentID, n)
}

// runBackground queues a turn and returns at once (background: true); the
// turn's outcome is kept in the session for agent_status and agent_wait.
func (s *Server) runBackground(sess *session, src turnSource, fn func(context.Context) (*toolResult, error)) (*toolResult, error) {
	j := &job{
		source: src,
		run: func(ctx context.Context) func() {
			if _, err := fn(ctx); err != nil {
				s.log.Info("background turn failed", "agent_id", sess.agentID(), "err", err)
			}
			return nil
		},
		discard: func(err error) {
			sess.recordOutcome(&turnOutcome{status: "error", err: err, finished: s.now()}, "")
		},
	}
	if err := sess.submit(j); err != nil {
		return nil, err
	}
	rec := sess.snapshot()
	text := fmt.Sprintf("started in the background: agent_id %s (%s). Poll with agent_status or wait with agent_wait.", rec.AgentID, rec.Identity)
	return &toolResult{Text: text, Structured: map[string]any{
		"agent_id": rec.AgentID, "threadId": rec.BackendID, "identity": rec.Identity, "content": text, "status": "busy",
	}}, nil
}

// lookupSession returns the session of agent_id or SESSION_NOT_FOUND.
func (s *Server) lookupSession(a args) (*session, error) {
	agentID, err := a.str("agent_id")
	if err != nil {
		return nil, err
	}
	if agentID == "" {
		return nil, newError(ErrInvalidParams, map[string]any{"argument": "agent_id"}, "argument \"agent_id\" is required")
	}
	s.smu.Lock()
	sess := s.sessions[agentID]
	s.smu.Unlock()
	if sess == nil {
		return nil, newError(ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q", agentID)
	}
	return sess, nil
}

// maxWait caps agent_wait's timeout_secs.
const maxWait = 300 * time.Second

// toolAgentWait waits for the running turn of a session to end and returns
// its result, or the current status when timeout_secs pass first (default
// 50 s, below common client timeouts). Progress goes to the client's token
// while it waits.
func (s *Server) toolAgentWait(ctx context.Context, c *toolCall) (*toolResult, error) {
	if err := c.args.checkUnknown("agent_wait", "agent_id", "timeout_secs"); err != nil {
		return nil, err
	}
	sess, err := s.lookupSession(c.args)
	if err != nil {
		return nil, err
	}
	secs, set, err := c.args.integer("timeout_secs")
	if err != nil {
		return nil, err
	}
	wait := 50 * time.Second
	if set {
		if secs < 0 {
			return nil, newError(ErrInvalidParams, map[string]any{"argument": "timeout_secs"}, "argument \"timeout_secs\" must not be negative")
		}
		wait = min(time.Duration(secs)*time.Second, maxWait)
	}
	sess.mu.Lock()
	busy := sess.running != nil || len(sess.queue) > 0
	done := sess.turnDone
	sess.mu.Unlock()
	finished := !busy
	if busy {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
	loop:
		for {
			select {
			case <-done:
				finished = true
				// The outcome is recorded just before the job ends: let it.
				idleCtx, cancel := context.WithTimeout(ctx, time.Second)
				sess.waitIdle(idleCtx)
				cancel()
				break loop
			case <-timer.C:
				break loop
			case <-tick.C:
				sess.mu.Lock()
				ev := sess.act.events(1)
				sess.mu.Unlock()
				msg := "waiting for the turn"
				if len(ev) == 1 && ev[0].Summary != "" {
					msg = "waiting: " + clip(ev[0].Summary, 80)
				}
				c.prog.send(msg)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	v := s.sessionDetail(ctx, sess, 0)
	v["done"] = finished
	text := jsonText(v)
	if finished {
		if last, ok := v["last_result"].(map[string]any); ok {
			if content, ok := last["content"].(string); ok {
				text = content
			}
		}
	} else {
		text = fmt.Sprintf("still %s after %s; call agent_wait again or agent_status\n%s", v["status"], wait, text)
	}
	return &toolResult{Text: text, Structured: v}, nil
}

// toolAgentInterrupt interrupts the running turn of a session; the session
// becomes interrupted and can be continued. On mcp-server the next turn runs
// on a fresh thread, seeded with the agent's recent messages, because the
// interrupted thread may deliver stray results (notes/codex.md).
func (s *Server) toolAgentInterrupt(ctx context.Context, c *toolCall) (*toolResult, error) {
	if err := c.args.checkUnknown("agent_interrupt", "agent_id"); err != nil {
		return nil, err
	}
	sess, err := s.lookupSession(c.args)
	if err != nil {
		return nil, err
	}
	sess.mu.Lock()
	running := sess.running != nil
	runCancel := sess.runCancel
	thread := sess.rec.BackendID
	done := sess.turnDone
	sess.mu.Unlock()
	if !running {
		v := s.sessionDetail(ctx, sess, 0)
		v["interrupted"] = false
		return &toolResult{Text: "nothing to interrupt: the session is " + fmt.Sprint(v["status"]), Structured: v}, nil
	}
	s.denyPendingApprovals(sess, "the turn was interrupted")
	if thread != "" {
		_ = s.backend.Interrupt(ctx, thread)
	}
	if runCancel != nil {
		runCancel()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	sess.mu.Lock()
	if sess.last == nil || sess.last.status != "interrupted" {
		sess.last = &turnOutcome{status: "interrupted", text: "interrupted", isError: true, threadID: thread, finished: s.now()}
	}
	sess.mu.Unlock()
	s.auditSession("turn_interrupted", sess.snapshot(), "by agent_interrupt")
	v := s.sessionDetail(ctx, sess, 0)
	v["interrupted"] = true
	return &toolResult{Text: "interrupted; continue with codex-reply", Structured: v}, nil
}

// toolAgentRespond answers a pending approval (approval_fallback "queue",
// or instead of the client's elicitation): approve, approve_for_session,
// deny, or "deny: <reason>".
func (s *Server) toolAgentRespond(_ context.Context, c *toolCall) (*toolResult, error) {
	if err := c.args.checkUnknown("agent_respond", "agent_id", "approval_id", "answer", "reason"); err != nil {
		return nil, err
	}
	sess, err := s.lookupSession(c.args)
	if err != nil {
		return nil, err
	}
	id, err := c.args.str("approval_id")
	if err != nil {
		return nil, err
	}
	ans, err := c.args.str("answer")
	if err != nil {
		return nil, err
	}
	reason, err := c.args.str("reason")
	if err != nil {
		return nil, err
	}
	d, err := parseAnswer(ans, reason)
	if err != nil {
		return nil, newError(ErrInvalidParams, map[string]any{"argument": "answer"}, "%v", err)
	}
	sess.mu.Lock()
	p := sess.approvals[id]
	if p == nil && id == "" && len(sess.approvals) == 1 {
		for _, only := range sess.approvals {
			p = only
		}
	}
	sess.mu.Unlock()
	if p == nil {
		return nil, newError(ErrInvalidParams, map[string]any{"argument": "approval_id", "approval_id": id},
			"no pending approval %q for this session (see agent_status)", id)
	}
	outcome := string(d.Kind) + " by agent_respond"
	if d.Reason != "" {
		outcome += ": " + d.Reason
	}
	if !p.offer(answer{d, outcome}) {
		return nil, newError(ErrInvalidParams, map[string]any{"approval_id": p.id}, "approval %s was already answered", p.id)
	}
	v := map[string]any{"agent_id": sess.agentID(), "approval_id": p.id, "decision": string(d.Kind), "reason": d.Reason}
	return &toolResult{Text: fmt.Sprintf("approval %s: %s", p.id, d.Kind), Structured: v}, nil
}

// toolListCodexSessions lists every Codex session on this machine from its
// rollout files, newest first, and whether this proxy has it bound.
func (s *Server) toolListCodexSessions(_ context.Context, c *toolCall) (*toolResult, error) {
	if err := c.args.checkUnknown("agent_list_codex_sessions", "cwd", "limit"); err != nil {
		return nil, err
	}
	cwd, err := c.args.str("cwd")
	if err != nil {
		return nil, err
	}
	limit, set, err := c.args.integer("limit")
	if err != nil {
		return nil, err
	}
	if !set {
		limit = 50
	}
	if cwd != "" && !filepath.IsAbs(cwd) {
		cwd = filepath.Join(s.opts.Cwd, cwd) // it need not exist here: rollouts may come from elsewhere
	}
	list, err := rollout.List(s.codexHome(), rollout.Filter{Cwd: cwd, Limit: limit})
	if err != nil {
		return nil, newError(ErrInternal, nil, "listing codex sessions: %v", err)
	}
	out := make([]map[string]any, 0, len(list))
	var lines []string
	for _, r := range list {
		v := map[string]any{"thread_id": r.ThreadID, "cwd": r.Cwd, "first_prompt": clip(r.FirstPrompt, 300),
			"timestamp": r.Timestamp.UTC().Format(time.RFC3339), "source": r.Source, "cli_version": r.CLIVersion,
			"path": r.Path, "bound": false}
		if sess := s.sessionByThread(r.ThreadID); sess != nil && sess.snapshot().Status.Live() {
			v["bound"] = true
			v["agent_id"] = sess.agentID()
		}
		out = append(out, v)
		lines = append(lines, fmt.Sprintf("%s  %s  %-6s %s  %q", r.ThreadID, r.Timestamp.UTC().Format(time.RFC3339), r.Source, r.Cwd, clip(r.FirstPrompt, 60)))
	}
	text := fmt.Sprintf("%d codex session(s)", len(out))
	if len(lines) > 0 {
		text += "\n" + strings.Join(lines, "\n")
	}
	return &toolResult{Text: text, Structured: map[string]any{"sessions": out}}, nil
}

func (s *Server) codexHome() string {
	if s.opts.CodexHome != "" {
		return s.opts.CodexHome
	}
	return rollout.Home()
}

// adoptNote seeds a fresh mcp-server thread with an adopted session's last
// messages (app-server resumes the thread itself).
func (s *Server) adoptNote(threadID string) (rollout.Session, string, error) {
	r, err := rollout.Find(s.codexHome(), threadID)
	if err != nil {
		return rollout.Session{}, "", newError(ErrSessionNotFound, map[string]any{"thread_id": threadID},
			"no Codex session %s under %s", threadID, s.codexHome())
	}
	msgs, err := rollout.Messages(r.Path, 10)
	if err != nil || len(msgs) == 0 {
		return r, "", nil
	}
	var b strings.Builder
	b.WriteString("[Adopted Codex session " + threadID + " — its last messages]\n")
	for _, m := range msgs {
		b.WriteString(m.Role + ": " + clip(m.Text, 1500) + "\n")
	}
	b.WriteString("[End of adopted session]")
	return r, b.String(), nil
}

// interruptedNote seeds the fresh thread that follows an interrupted
// mcp-server thread with the agent's recent messages.
func interruptedNote(rec registry.Session, msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	if len(msgs) > 5 {
		msgs = msgs[len(msgs)-5:]
	}
	var b strings.Builder
	b.WriteString("[Previous thread " + rec.BackendID + " was interrupted — your last messages there]\n")
	for _, m := range msgs {
		b.WriteString("- " + clip(m, 1000) + "\n")
	}
	b.WriteString("[End of previous thread]")
	return b.String()
}
