package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// toolCodexReply continues a session by agent_id, or by Codex thread id
// (threadId / conversationId). A thread id no session knows is passed to
// Codex as it is, without context (Codex decides whether it exists).
func (s *Server) toolCodexReply(ctx context.Context, c *toolCall) (*toolResult, error) {
	type outcome struct {
		res *toolResult
		err error
	}
	ch := make(chan outcome, 1)
	c.router = nil // not on the router's goroutine: the turn must not hand it on
	s.startCodexReply(ctx, c, func(res *toolResult, err error) { ch <- outcome{res, err} })
	o := <-ch
	return o.res, o.err
}

// startCodexReply checks a codex-reply and queues its turn without
// blocking; the router calls it so that replies to one session keep the
// order the client sent them in. done is called exactly once with the
// outcome (at once for a bad request).
func (s *Server) startCodexReply(ctx context.Context, c *toolCall, done func(*toolResult, error)) {
	wait, err := s.checkCodexReply(ctx, c, done)
	if err != nil {
		done(nil, err)
		return
	}
	if wait != nil {
		go func() { done(wait()) }()
	}
}

// checkCodexReply does the work of startCodexReply. It returns an error for
// a bad request, a function to run on a goroutine of its own (a reply to a
// thread without a session), or neither when it has handed the turn to
// done itself.
func (s *Server) checkCodexReply(ctx context.Context, c *toolCall, done func(*toolResult, error)) (func() (*toolResult, error), error) {
	a := c.args
	if err := a.checkUnknown("codex-reply", "prompt", "agent_id", "threadId", "conversationId", "cwd", "background"); err != nil {
		return nil, err
	}
	background, _, err := a.boolean("background")
	if err != nil {
		return nil, err
	}
	prompt, err := a.str("prompt")
	if err != nil {
		return nil, err
	}
	agentID, err := a.str("agent_id")
	if err != nil {
		return nil, err
	}
	threadID, err := a.str("threadId")
	if err != nil {
		return nil, err
	}
	convID, err := a.str("conversationId")
	if err != nil {
		return nil, err
	}
	cwdArg, err := a.str("cwd")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, newError(ErrInvalidParams, map[string]any{"argument": "prompt"}, "argument \"prompt\" is required")
	}
	if threadID == "" {
		threadID = convID
	}
	var sess *session
	switch {
	case agentID != "":
		s.smu.Lock()
		sess = s.sessions[agentID]
		s.smu.Unlock()
		if sess == nil {
			return nil, newError(ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q", agentID)
		}
	case threadID != "":
		sess = s.sessionByThread(threadID)
		if sess == nil {
			return func() (*toolResult, error) { return s.anonymousReply(ctx, c, threadID, prompt) }, nil
		}
	default:
		return nil, newError(ErrInvalidParams, map[string]any{"argument": "agent_id"}, "codex-reply needs agent_id (or threadId)")
	}
	rec := sess.snapshot()
	if !rec.Status.Live() {
		return nil, newError(ErrSessionClosed, map[string]any{"agent_id": rec.AgentID, "status": string(rec.Status)},
			"session %s is %s; resume it with the codex tool and agent_id", rec.AgentID, rec.Status)
	}
	if cwdArg != "" {
		cwd, err := s.resolveCwd(cwdArg)
		if err != nil {
			return nil, err
		}
		sess.mu.Lock()
		sess.rec.Cwd = cwd
		sess.mu.Unlock()
	}
	var early *earlyAnswer
	if !background {
		early = &earlyAnswer{call: c}
	}
	run := func(ctx context.Context) (*toolResult, error) {
		return s.turn(ctx, sess, turnInput{prompt: prompt, call: c, source: sourceClaude, early: early})
	}
	if background {
		done(s.runBackground(sess, sourceClaude, run))
		return nil, nil
	}
	s.enqueue(ctx, sess, sourceClaude, run, done, early)
	return nil, nil
}

// sessionByThread finds the session bound to a Codex thread id.
func (s *Server) sessionByThread(threadID string) *session {
	s.smu.Lock()
	defer s.smu.Unlock()
	var found *session
	for _, sess := range s.sessions {
		rec := sess.snapshot()
		if rec.BackendID == threadID && (found == nil || rec.Status.Live()) {
			found = sess
		}
	}
	return found
}

// anonymousReply forwards a codex-reply for a thread no session knows.
func (s *Server) anonymousReply(ctx context.Context, c *toolCall, threadID, prompt string) (*toolResult, error) {
	s.appendAudit(registry.Entry{Event: "turn:claude", Summary: prompt, Outcome: "forwarded (thread " + threadID + " has no session)"})
	res, err := s.backend.Turn(ctx, codexchild.TurnRequest{
		ThreadID: threadID, Prompt: prompt, Timeout: s.opts.RequestTimeout,
		Handler: &turnHandler{s: s, call: c},
	})
	if err != nil {
		var te *codexchild.TimeoutError
		if errors.As(err, &te) {
			return nil, newError(ErrRequestTimeout, map[string]any{"threadId": threadID, "partial": te.Partial}, "codex turn timed out after %s", te.After)
		}
		return nil, s.backendError(err)
	}
	return &toolResult{Text: res.Text, IsError: res.IsError, Structured: map[string]any{
		"agent_id": "", "threadId": firstNonEmpty(res.ThreadID, threadID), "identity": "", "content": res.Text,
		"status": firstNonEmpty(res.Status, "completed"),
	}}, nil
}

// resumeByAgentID is codex with agent_id (FR-16.3, FR-17.7): a live session
// just gets the prompt; a closed, stale or interrupted one is bound again
// (its identity claimed), its saved summary prepended to the first turn.
func (s *Server) resumeByAgentID(ctx context.Context, c *toolCall, agentID, prompt, cwdArg string, background bool) (*toolResult, error) {
	s.smu.Lock()
	sess := s.sessions[agentID]
	s.smu.Unlock()
	if sess == nil {
		return nil, newError(ErrSessionNotFound, map[string]any{"agent_id": agentID}, "no session with agent_id %q in this proxy's registry", agentID)
	}
	if err := s.rebind(sess, sourceClaude); err != nil {
		return nil, err
	}
	if cwdArg != "" {
		cwd, err := s.resolveCwd(cwdArg)
		if err != nil {
			return nil, err
		}
		sess.mu.Lock()
		sess.rec.Cwd = cwd
		sess.mu.Unlock()
	}
	if strings.TrimSpace(prompt) == "" {
		prompt = defaultContinuation
	}
	run := func(ctx context.Context) (*toolResult, error) {
		return s.turn(ctx, sess, turnInput{prompt: prompt, call: c, source: sourceResume})
	}
	if background {
		return s.runBackground(sess, sourceClaude, run)
	}
	return s.runQueued(ctx, sess, sourceClaude, run)
}

// rebind makes a session that is not live live again: identity uniqueness in
// process, the session limit, the cross-process claim; the saved summary
// becomes the resume note. A live session is left as it is.
func (s *Server) rebind(sess *session, src turnSource) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	rec := sess.snapshot()
	if rec.Status.Live() {
		return nil
	}
	if s.isClosing() {
		return newError(ErrInvalidSessionParams, nil, "the proxy is shutting down")
	}
	if other := s.byIdentity[rec.Identity]; other != nil && other != sess {
		id := other.agentID()
		return newError(ErrIdentityConflict, map[string]any{"identity": rec.Identity, "conflicting_agent_id": id},
			"identity conflict: %q is already bound to agent_id %q; close it before resuming %s", rec.Identity, id, rec.AgentID)
	}
	if n := len(s.byIdentity); n >= s.opts.MaxSessions {
		return newError(ErrMaxSessionsExceeded, map[string]any{"max_concurrent_threads": s.opts.MaxSessions, "active": n},
			"max_concurrent_threads (%d) reached", s.opts.MaxSessions)
	}
	updated, err := s.reg.Update(rec.AgentID, func(x *registry.Session) {
		x.Status = registry.StatusIdle
		x.ThreadState = registry.ThreadIdle
	})
	if err != nil {
		return s.claimError(rec.Identity, err)
	}
	note := s.resumeNote(updated)
	sess.mu.Lock()
	sess.rec = updated
	sess.closing = false
	sess.resumeNote = note
	if sess.params.Model == "" && sess.params.Sandbox == "" && sess.params.ApprovalPolicy == "" {
		if st, err := s.settings(updated.Role); err == nil {
			sess.params = st
		} else {
			sess.params, _ = s.settings("")
		}
	}
	sess.autoMail = s.autoMailFor(updated.Identity)
	sess.mu.Unlock()
	s.byIdentity[rec.Identity] = sess
	s.bindMail(sess)
	s.auditSession("session_resumed", updated, fmt.Sprintf("by %s; summary: %v", src, note != ""))
	return nil
}

// resumeNote is the saved summary in the seed 003 form, or "" (with a
// warning) when there is none (FR-6.3).
func (s *Server) resumeNote(rec registry.Session) string {
	var text string
	if rec.BackendID != "" {
		t, err := s.reg.Dir().ReadSummary(rec.Identity, rec.BackendID)
		if err == nil {
			text = strings.TrimSpace(t)
		}
	}
	if text == "" {
		s.log.Warn("resuming without a summary (the previous process did not save one)", "agent_id", rec.AgentID, "identity", rec.Identity)
		return ""
	}
	where := firstNonEmpty(rec.RepoName, "no-repo") + "/" + firstNonEmpty(rec.Branch, "no-branch")
	return "[Previous session — " + rec.Identity + " on " + where + "]\n" + text + "\n[End of previous session]"
}
