package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// HandOver gives every live session to the Claude Code session to (the
// short id of the background session the client's conversation moved
// to), whose proxy takes them up live (Take, Rebind): no session can be
// created or resumed here any more; queued turns fail with
// SESSION_CLOSED; a running turn may finish until ctx ends, and is then
// interrupted; each session is recorded stale with registry.Session.
// HandedTo set, without a summary (its thread goes on in the next proxy),
// its identity released and its mail unbound. A session being closed is
// left to its close. It returns the sessions handed over, by agent_id.
func (m *Manager) HandOver(ctx context.Context, to string) []registry.Session {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	var mu sync.Mutex
	var out []registry.Session
	var wg sync.WaitGroup
	for _, s := range m.Live() {
		wg.Go(func() {
			if rec, ok := s.handOver(ctx, to); ok {
				mu.Lock()
				out = append(out, rec)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b registry.Session) int { return strings.Compare(a.AgentID, b.AgentID) })
	return out
}

// handOver hands the session over (Manager.HandOver).
func (s *Session) handOver(ctx context.Context, to string) (registry.Session, bool) {
	m := s.m
	s.mu.Lock()
	if s.closing != nil || !s.rec.Status.Live() {
		s.mu.Unlock()
		return registry.Session{}, false
	}
	closing := make(chan struct{})
	s.closing = closing
	queued := s.queue
	s.queue = nil
	agentID := s.rec.AgentID
	s.mu.Unlock()
	defer close(closing)

	gone := proxyerr.New(proxyerr.ErrSessionClosed, map[string]any{"agent_id": agentID, "handed_to": to},
		"session %s was handed over to Claude Code session %s, where the conversation moved", agentID, to)
	for _, j := range queued {
		j.discard(gone)
	}
	if !s.waitIdle(ctx) {
		if ok, _ := s.Interrupt(context.WithoutCancel(ctx)); ok {
			m.log.Info("a running turn was interrupted to hand its session over", "agent_id", agentID, "to", to)
		}
	}
	s.denyApprovals("the session is being handed over")
	s.releasePlace(ctx, true) // unlocked: the next proxy re-enters it
	facts := s.Record()
	rec, err := m.cfg.Registry.Update(agentID, func(x *registry.Session) {
		turns := max(x.Turns, facts.Turns) // the last turn's count may still be on its way to the file
		finalRecord(x, facts, registry.StatusStale)
		x.Turns, x.HandedTo = turns, to
	})
	s.mu.Lock()
	if err == nil {
		s.rec = rec
	} else {
		s.rec.Status, s.rec.ThreadState = registry.StatusStale, registry.ThreadClosed
		rec = s.rec
	}
	s.closing = nil
	s.mu.Unlock()
	if err != nil && !errors.Is(err, registry.ErrClosed) {
		m.log.Error("cannot record the session as handed over", "agent_id", agentID, "err", err)
	}
	m.mu.Lock()
	released := m.byIdentity[rec.Identity] == s
	if released {
		delete(m.byIdentity, rec.Identity)
	}
	m.mu.Unlock()
	if released && m.cfg.Mail != nil {
		m.cfg.Mail.Unbind(rec.Identity)
	}
	m.cfg.Audit.Session("session_handed_over", rec, "to Claude Code session "+to)
	m.log.Info("session handed over", "agent_id", agentID, "identity", rec.Identity, "to", to)
	return rec, err == nil
}

// Take adds a session that came into the registry after the Manager was
// made (registry.Registry.AdoptHandedTo) and returns it, not live (Rebind
// binds it); for an agent_id it holds already, it returns that session.
func (m *Manager) Take(rec registry.Session) *Session {
	m.mu.Lock()
	if s := m.byID[rec.AgentID]; s != nil {
		m.mu.Unlock()
		return s
	}
	s := m.newSession(rec)
	m.byID[rec.AgentID] = s
	m.mu.Unlock()
	m.cfg.changed()
	return s
}
