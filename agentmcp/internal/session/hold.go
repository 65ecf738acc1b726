package session

import (
	"context"
	"errors"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
)

// This file is a hold on a session: something done to what the session
// works on while no turn runs (agent_merge commits the agent's uncommitted
// work on its branch and reads its worktree), so that no turn can start
// meanwhile and see, or change, a half-done state.

// ErrBusy is under the error of a Hold refused because a turn of the
// session runs or waits.
var ErrBusy = errors.New("session: a turn runs or waits")

// ErrHeld is under the error of a Hold refused because another hold runs.
var ErrHeld = errors.New("session: another hold runs")

// Hold runs fn while the session runs no turn. It is refused at once,
// without calling fn, while a turn of the session runs or waits (ErrBusy),
// another hold runs (ErrHeld) or the session is being closed; the error is
// the client's (INVALID_SESSION_PARAMS). While fn runs, a turn asked for
// waits in the queue and starts when fn has returned, auto-mail is not
// delivered (the mail layer is told once the hold ends that the session is
// idle), and a close waits for fn before it releases the session's place.
// A closed session can be held too (its kept worktree): a resume's turn
// then waits likewise.
func (s *Session) Hold(ctx context.Context, fn func(ctx context.Context) error) error {
	s.mu.Lock()
	id := s.rec.AgentID
	switch {
	case s.closing != nil:
		s.mu.Unlock()
		return proxyerr.New(proxyerr.ErrSessionClosed, map[string]any{"agent_id": id}, "session %s is being closed", id)
	case s.running != nil || len(s.queue) > 0:
		s.mu.Unlock()
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, ErrBusy, map[string]any{"agent_id": id, "status": "busy"},
			"session %s has a turn running (or waiting): wait for it to end (agent_wait) first", id)
	case s.held != nil:
		s.mu.Unlock()
		return proxyerr.Wrap(proxyerr.ErrInvalidSessionParams, ErrHeld, map[string]any{"agent_id": id, "status": "held"},
			"session %s is held by another call (a merge of its work) until that one ends", id)
	}
	held := make(chan struct{})
	s.held = held
	s.mu.Unlock()
	defer s.unhold(held)
	return fn(ctx)
}

// unhold ends a hold: the first queued turn starts, else the mail layer
// is told that the session is idle.
func (s *Session) unhold(held chan struct{}) {
	s.mu.Lock()
	s.held = nil
	close(held)
	var run func()
	live := s.closing == nil && s.rec.ThreadState != stateClosed
	if live && s.running == nil && len(s.queue) > 0 {
		next := s.queue[0]
		s.queue = s.queue[1:]
		run = s.startLocked(next)
	}
	idle := live && run == nil && s.rec.ThreadState == stateIdle
	identity := s.rec.Identity
	s.mu.Unlock()
	switch {
	case run != nil:
		go run()
	case idle && s.m.cfg.Mail != nil:
		s.m.cfg.Mail.Idle(identity) // mail that came meanwhile
	}
}

// waitUnheld waits for a running hold to end, or ctx.
func (s *Session) waitUnheld(ctx context.Context) {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held == nil {
		return
	}
	select {
	case <-held:
	case <-ctx.Done():
	}
}
