package proxy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// summaryPrompt asks a session for its summary on close and shutdown (seed
// 003 "Session Summary and Resume").
const summaryPrompt = `Session ending. Write a concise summary of:
- What you were working on
- Current state — what is done, what is not
- Any open questions or blockers
- Next steps if resumed`

// closeOutcome reports how a session was closed.
type closeOutcome struct {
	rec          registry.Session
	summarySaved bool
	already      bool
}

// closeSession closes a session (FR-17.3, FR-17.4, FR-17.10): queued turns
// fail with SESSION_CLOSED, pending approvals are denied, a running turn is
// interrupted; a busy session (or any live one when summarize is set, as on
// shutdown) is asked for a summary within ctx; the identity is released.
// Closing a closed session is a no-op.
func (s *Server) closeSession(ctx context.Context, sess *session, summarize bool) (closeOutcome, error) {
	sess.mu.Lock()
	if !sess.rec.Status.Live() || sess.closing {
		rec := sess.rec
		sess.mu.Unlock()
		if sess.closing {
			// Another close is in progress: wait for it.
			for {
				select {
				case <-ctx.Done():
					return closeOutcome{rec: sess.snapshot(), already: true}, nil
				case <-time.After(20 * time.Millisecond):
				}
				if r := sess.snapshot(); !r.Status.Live() {
					return closeOutcome{rec: r, already: true}, nil
				}
			}
		}
		return closeOutcome{rec: rec, already: true}, nil
	}
	sess.closing = true
	queued := sess.queue
	sess.queue = nil
	running := sess.running
	runCancel := sess.runCancel
	sess.mu.Unlock()

	closedErr := newError(ErrSessionClosed, map[string]any{"agent_id": sess.agentID()}, "session %s was closed", sess.agentID())
	for _, j := range queued {
		if j.discard != nil {
			j.discard(closedErr)
		}
	}
	s.denyPendingApprovals(sess, "the session is being closed")
	busy := running != nil
	if busy {
		rec := sess.snapshot()
		if rec.BackendID != "" {
			_ = s.backend.Interrupt(ctx, rec.BackendID)
		}
		if runCancel != nil {
			runCancel()
		}
		waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		sess.waitIdle(waitCtx)
		cancel()
	}
	saved := false
	if busy || summarize {
		saved = s.summarize(ctx, sess)
	}
	var rec registry.Session
	var err error
	if busy && !saved || summarize && !saved {
		rec, err = s.reg.InterruptSession(sess.agentID())
	} else {
		rec, err = s.reg.CloseSession(sess.agentID())
	}
	if err != nil && !errors.Is(err, registry.ErrClosed) {
		s.log.Error("cannot persist the closed session", "agent_id", sess.agentID(), "err", err)
	}
	sess.mu.Lock()
	if err == nil {
		sess.rec = rec
	} else {
		sess.rec.Status, sess.rec.ThreadState = registry.StatusClosed, registry.ThreadClosed
		rec = sess.rec
	}
	sess.closing = false
	sess.mu.Unlock()
	s.smu.Lock()
	if s.byIdentity[rec.Identity] == sess {
		delete(s.byIdentity, rec.Identity)
		if s.mail != nil {
			s.mail.Unbind(rec.Identity)
		}
	}
	s.smu.Unlock()
	s.auditSession("session_closed", rec, map[bool]string{true: "summary saved", false: "no summary"}[saved])
	s.log.Info("session closed", "agent_id", rec.AgentID, "identity", rec.Identity, "status", rec.Status, "summary", saved)
	return closeOutcome{rec: rec, summarySaved: saved}, nil
}

// summarize asks the session's thread for a summary and saves it; it
// reports whether one was saved.
func (s *Server) summarize(ctx context.Context, sess *session) bool {
	rec := sess.snapshot()
	if rec.BackendID == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.SummaryTimeout)
	defer cancel()
	res, err := s.turn(ctx, sess, turnInput{prompt: summaryPrompt, source: sourceSummary, sameThread: true, timeout: s.opts.SummaryTimeout})
	if err != nil || res == nil || res.IsError || strings.TrimSpace(res.Text) == "" {
		s.log.Warn("no summary from the session", "agent_id", rec.AgentID, "err", err)
		return false
	}
	rec = sess.snapshot()
	if err := s.reg.Dir().WriteSummary(rec.Identity, rec.BackendID, res.Text); err != nil {
		s.log.Error("cannot write the summary", "agent_id", rec.AgentID, "err", err)
		return false
	}
	return true
}

// shutdown is FR-7: stop accepting turns, summaries from every live session
// in parallel within the summary budget, registry persisted, identities
// released, child stopped.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()

	s.smu.Lock()
	live := make([]*session, 0, len(s.byIdentity))
	for _, sess := range s.byIdentity {
		live = append(live, sess)
	}
	s.smu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.SummaryTimeout+2*time.Second)
	var wg sync.WaitGroup
	for _, sess := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.closeSession(ctx, sess, s.opts.PersistThreads); err != nil {
				s.log.Warn("close on shutdown", "agent_id", sess.agentID(), "err", err)
			}
		}()
	}
	wg.Wait()
	cancel()

	// The bridge stops before the child, so that batches already written
	// to the child are marked read (else they come again after a restart).
	if s.mail != nil {
		if err := s.mail.Close(); err != nil {
			s.log.Warn("stopping mail delivery", "err", err)
		}
	}
	s.mu.Lock()
	for _, c := range s.inflight {
		c()
	}
	s.mu.Unlock()
	s.cancel()
	<-s.persistDone
	stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	if err := s.backend.Close(stopCtx); err != nil {
		s.log.Warn("stopping the codex child", "err", err)
	}
	stop()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.log.Warn("some requests were still running at shutdown")
	}
	s.client.close()
	s.routers.close()
	if err := s.audit.Close(); err != nil {
		s.log.Warn("closing the audit log", "err", err)
	}
	if err := s.reg.Close(); err != nil {
		s.log.Warn("releasing identities", "err", err)
	}
	s.log.Info("shutdown complete")
}

// Resume binds a previous session at start-up (serve --resume, FR-6):
// target "" is the most recent session of the instance identity (else of the
// registry), an agent_id, or an identity. Its summary is prepended to its
// first turn. It returns the resumed session's agent_id.
func (s *Server) Resume(target string) (string, error) {
	var rec registry.Session
	var ok bool
	switch {
	case target == "":
		if rec, ok = s.reg.MostRecent(s.opts.Identity); !ok {
			for _, r := range s.reg.List(registry.Filter{}) {
				if !ok || r.LastActive.After(rec.LastActive) {
					rec, ok = r, true
				}
			}
		}
	default:
		if rec, ok = s.reg.ByAgentID(target); !ok {
			rec, ok = s.reg.MostRecent(target)
		}
	}
	if !ok {
		if target == "" {
			return "", errors.New("--resume: this instance has no previous session")
		}
		return "", errors.New("--resume: no session with agent_id or identity " + target)
	}
	s.smu.Lock()
	sess := s.sessions[rec.AgentID]
	s.smu.Unlock()
	if sess == nil {
		return "", errors.New("--resume: session " + rec.AgentID + " vanished")
	}
	if err := s.rebind(sess, sourceResume); err != nil {
		return "", err
	}
	s.log.Info("resumed session", "agent_id", rec.AgentID, "identity", rec.Identity, "thread", rec.BackendID)
	return rec.AgentID, nil
}
