package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// summaryPrompt asks a session for its summary on close and shutdown
// (docs/requirements.md#fr-6).
const summaryPrompt = `Session ending. Write a concise summary of:
- What you were working on
- Current state — what is done, what is not
- Any open questions or blockers
- Next steps if resumed`

// CloseOutcome reports how a session was closed.
type CloseOutcome struct {
	Record       registry.Session
	SummarySaved bool
	// Already: the session was closed before (closing it again does
	// nothing).
	Already bool
	// Usage is the session's token usage over its life (nil when its
	// agent reported none).
	Usage *backend.Usage
	// Released says what became of the session's own place (isolation
	// worktree): removed, or kept with its work; nil without one, and at
	// a shutdown (the place is kept for a resume).
	Released *Released
}

// Close closes a session (FR-17.3, FR-17.4, FR-17.10). The registry
// comes first: the record is closed at once with the facts it has (its
// thread, turns and last result; status closed, or interrupted when a turn
// was running) and the identity released, so that a proxy killed right
// after leaves nothing live behind (at shutdown, finishAll wrote it
// already). Then queued turns fail with SESSION_CLOSED, pending approvals
// are denied, a running turn is interrupted and, with summarize, the
// thread is asked for a summary within ctx, saved for a resume that cannot
// continue the thread. Closing a closed session does nothing; a close
// while another runs waits for that one.
func (m *Manager) Close(ctx context.Context, s *Session, summarize bool) CloseOutcome {
	s.mu.Lock()
	if other := s.closing; other != nil {
		s.mu.Unlock()
		select {
		case <-other:
		case <-ctx.Done():
		}
		return CloseOutcome{Record: s.Record(), Already: true, Usage: s.Usage()}
	}
	if !s.rec.Status.Live() {
		rec := s.rec
		s.mu.Unlock()
		return CloseOutcome{Record: rec, Already: true, Usage: s.Usage()}
	}
	closed := make(chan struct{})
	s.closing = closed
	queued := s.queue
	s.queue = nil
	busy := s.running != nil
	runCancel := s.runCancel
	agentID := s.rec.AgentID
	s.mu.Unlock()
	defer close(closed)

	before, unused := m.resumed.take(s)
	unused = unused && !busy
	rec := s.closeRecord(busy, unused, before)
	closedErr := proxyerr.New(proxyerr.ErrSessionClosed, map[string]any{"agent_id": agentID}, "session %s was closed", agentID)
	for _, j := range queued {
		j.discard(closedErr)
	}
	s.denyApprovals("the session is being closed")
	if busy {
		if rec.BackendID != "" {
			if b, err := m.cat.of(rec); err == nil {
				_ = b.Interrupt(ctx, rec.BackendID)
			}
		}
		if runCancel != nil {
			runCancel()
		}
		waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s.waitIdle(waitCtx)
		cancel()
	}
	saved := false
	if summarize && !unused {
		saved = s.summarize(ctx)
	}
	// A merge of its work ends before its place is let go of.
	s.waitUnheld(ctx)
	released := s.releasePlace(ctx, m.Closing()) // a shutdown keeps it for a resume
	s.mu.Lock()
	s.closing = nil
	s.mu.Unlock()
	how := map[bool]string{true: "summary saved", false: "no summary"}[saved]
	if unused {
		how = "resumed and closed without a turn: status " + string(rec.Status) + " and summary kept"
	}
	if released != nil {
		how += "; " + released.String()
	}
	// The session's token usage over its life goes into the entry's
	// summary (a close has no prompt), its outcome stays as it was.
	usage := s.Usage()
	entry := registry.Entry{Event: "session_closed", AgentID: rec.AgentID, Identity: rec.Identity, Outcome: how}
	if usage != nil {
		entry.Summary = UsageLine(*usage)
	}
	m.cfg.Audit.Append(entry)
	s.changed()
	m.log.Info("session closed", "agent_id", rec.AgentID, "identity", rec.Identity, "status", rec.Status, "summary", saved, "unused", unused)
	return CloseOutcome{Record: s.Record(), SummarySaved: saved, Usage: usage, Released: released}
}

// closeRecord writes the closed record of s (closeUnused for a resumed
// session that ran no turn; interrupted for a busy one; else closed) with
// the facts the session has, and releases its identity here and for the
// mail layer. It returns the record.
func (s *Session) closeRecord(busy, unused bool, before registry.Session) registry.Session {
	m := s.m
	s.mu.Lock()
	facts, final := s.rec, s.final
	s.final = nil
	s.mu.Unlock()
	var rec registry.Session
	var err error
	switch {
	case final != nil:
		rec = *final // written by finishAll
	case unused:
		rec, err = closeUnused(m.cfg.Registry, facts.AgentID, before)
	default:
		st := registry.StatusClosed
		if busy {
			st = registry.StatusInterrupted
		}
		rec, err = m.cfg.Registry.Update(facts.AgentID, func(x *registry.Session) {
			if x.Status.Live() {
				finalRecord(x, facts, st)
			}
		})
	}
	if err != nil && !errors.Is(err, registry.ErrClosed) {
		m.log.Error("cannot persist the closed session", "agent_id", facts.AgentID, "err", err)
	}
	s.mu.Lock()
	if err == nil {
		rec.Turns = max(rec.Turns, s.rec.Turns) // the last turn's count may still be on its way to the file
		s.rec = rec
		s.savedThread = rec.BackendID
	} else {
		s.rec.Status, s.rec.ThreadState = registry.StatusClosed, registry.ThreadClosed
		rec = s.rec
	}
	s.mu.Unlock()
	m.mu.Lock()
	released := m.byIdentity[rec.Identity] == s
	if released {
		delete(m.byIdentity, rec.Identity)
	}
	m.mu.Unlock()
	if released && m.cfg.Mail != nil {
		m.cfg.Mail.Unbind(rec.Identity)
	}
	return rec
}

// finalRecord makes x, a session's live record, its final one: status st,
// with the facts the session has (its thread, turns, last result, where
// it ran).
func finalRecord(x *registry.Session, facts registry.Session, st registry.Status) {
	x.Status, x.ThreadState = st, registry.ThreadClosed
	x.BackendID, x.Turns, x.LastResult = facts.BackendID, facts.Turns, facts.LastResult
	x.RepoRoot, x.RepoName, x.Branch, x.Cwd = facts.RepoRoot, facts.RepoName, facts.Branch, facts.Cwd
	if facts.ForkedFrom != nil {
		x.ForkedFrom = facts.ForkedFrom
	}
	if facts.Usage != nil {
		x.Usage = facts.Usage
	}
	x.Model, x.BudgetTokens = firstNonEmpty(facts.Model, x.Model), facts.BudgetTokens
}

// finishAll writes the final record of every session in live with one
// registry write (a shutdown: Claude Code kills the server 500 ms after it
// asked it to stop, and each write costs an fsync or two): closed, or
// interrupted for a busy one, with its facts; a resumed session that ran
// no turn gets back the record it had. Close then uses these records
// instead of writing its own. A session being closed already is left to
// that close.
func (m *Manager) finishAll(live map[string]*Session) {
	fns := make(map[string]func(*registry.Session), len(live))
	owners := make(map[string]*Session, len(live))
	for _, s := range live {
		before, unused := m.resumed.peek(s)
		s.mu.Lock()
		facts, busy, closing := s.rec, s.running != nil, s.closing != nil
		s.mu.Unlock()
		if closing || !facts.Status.Live() {
			continue
		}
		st := registry.StatusClosed
		if busy {
			st = registry.StatusInterrupted
		}
		switch {
		case unused && !busy && !before.Status.Live():
			fns[facts.AgentID] = func(x *registry.Session) {
				x.Status, x.ThreadState, x.LastActive = before.Status, before.ThreadState, before.LastActive
			}
		default:
			fns[facts.AgentID] = func(x *registry.Session) { finalRecord(x, facts, st) }
		}
		owners[facts.AgentID] = s
	}
	if len(fns) == 0 {
		return
	}
	recs, err := m.cfg.Registry.Finish(fns)
	if err != nil {
		m.log.Error("cannot write the sessions' final records at once; each close writes its own", "err", err)
		return
	}
	for id, rec := range recs {
		s := owners[id]
		s.mu.Lock()
		s.final = &rec
		s.mu.Unlock()
	}
	m.log.Info("sessions' records closed", "sessions", len(recs))
}

// closeUnused closes a session that was resumed (Rebind) and ran no turn
// since: it gets back the status, thread state and last activity it had
// before, and no summary is asked for, so that Codex is not started only to
// summarise a thread it may not know (a new mcp-server process never does)
// and a closed session with its summary does not become interrupted.
func closeUnused(reg Registry, agentID string, before registry.Session) (registry.Session, error) {
	if before.Status.Live() {
		// Resumed from a live record (it never is, but): close it.
		return reg.CloseSession(agentID)
	}
	return reg.Update(agentID, func(x *registry.Session) {
		x.Status, x.ThreadState, x.LastActive = before.Status, before.ThreadState, before.LastActive
	})
}

// Discard undoes a session whose first turn failed before its backend gave
// it a thread (the agent missing, a setting it refused): it releases the
// identity and drops the session from the registry and this Manager, so
// that nothing is left holding what it took; why goes to the audit, and is
// remembered for Absent.Discarded (before the session is dropped, so that
// a lookup meanwhile finds one or the other). It reports false, doing nothing, for a
// session that has a thread.
func (m *Manager) Discard(ctx context.Context, s *Session, why error) bool {
	if s.Record().BackendID != "" {
		return false
	}
	out := m.Close(ctx, s, false)
	rec := out.Record
	if rec.BackendID != "" {
		return false
	}
	if err := m.cfg.Registry.Remove(rec.AgentID); err != nil && !errors.Is(err, registry.ErrClosed) {
		m.log.Warn("cannot drop the failed session from the registry", "agent_id", rec.AgentID, "err", err)
	}
	m.absent.discard(discardedSession{agentID: rec.AgentID, identity: rec.Identity, reason: why.Error(), at: m.now().UTC()})
	m.mu.Lock()
	if m.byID[rec.AgentID] == s {
		delete(m.byID, rec.AgentID)
	}
	m.mu.Unlock()
	m.cfg.changed()
	m.cfg.Audit.Session("session_discarded", rec, "its first turn failed: "+why.Error())
	m.log.Info("session discarded: its first turn failed", "agent_id", rec.AgentID, "identity", rec.Identity, "err", why)
	return true
}

// summarize asks the session's thread for a summary and saves it; it
// reports whether one was saved.
func (s *Session) summarize(ctx context.Context) bool {
	m := s.m
	rec := s.Record()
	if rec.BackendID == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.SummaryTimeout)
	defer cancel()
	res, err := s.turn(ctx, nil, Turn{Prompt: summaryPrompt, Source: SourceSummary, SameThread: true, Timeout: m.cfg.SummaryTimeout}, false)
	if err != nil || res == nil || res.IsError || strings.TrimSpace(res.Text) == "" {
		m.log.Warn("no summary from the session", "agent_id", rec.AgentID, "err", err)
		return false
	}
	rec = s.Record()
	if err := m.cfg.Registry.WriteSummary(rec.Identity, rec.BackendID, res.Text); err != nil {
		m.log.Error("cannot write the summary", "agent_id", rec.AgentID, "err", err)
		return false
	}
	return true
}

// Shutdown closes every live session (FR-7): first their final records,
// all in one write (finishAll), which Config.RecordsClosed hears of, then
// in parallel within the summary budget each is closed and, when
// Config.PersistThreads is set, asked for a summary, saved if it comes in
// time. No session can be created or resumed afterwards.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	live := m.Live()
	m.finishAll(live)
	if m.cfg.RecordsClosed != nil {
		m.cfg.RecordsClosed()
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.SummaryTimeout+2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Close(ctx, s, m.cfg.PersistThreads)
		}()
	}
	wg.Wait()
}

// Stop ends what is left: approvals are denied, running jobs are
// cancelled, the persister writes what is queued. It returns once the
// persister has written; Wait waits for the jobs.
func (m *Manager) Stop() {
	m.cancel()
	m.persist.close()
	if m.ownGit {
		m.cfg.Git.Close()
	}
}

// Wait waits at most wait for the running jobs and approval bridges to end
// and reports whether they all did.
func (m *Manager) Wait(wait time.Duration) bool {
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}
