package session

import (
	"context"
	"errors"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// This file is input added to a session's running turn instead of queued
// behind it: mail (TrySteerMail) and the client's own reply (SteerTurn),
// where the session's backend can (backend.Steerer: Codex app-server's
// turn/steer). The agent reads it at its next model request; the running
// turn's result answers it. Input the agent did not take (a
// *backend.SteerError: the turn ended first, the agent refused it) is
// delivered as a turn of its own after the running one, and nothing more
// is steered into that turn. A kind without Steerer queues, as before.

// steerTimeout bounds one steer: the wait for the running turn's id (a
// turn whose start the agent has not answered yet) and the agent's answer.
const steerTimeout = 30 * time.Second

// steerTarget returns what a steer into s's running turn needs: its job,
// its thread and the Steerer; ok is false when s cannot take one now (no
// running turn, or one that refused a steer already, a thread not known
// yet, a summary turn, a close or a hold under way, a backend that does
// not steer). s.mu is held.
func (s *Session) steerTargetLocked(b Backend) (j *job, thread string, st backend.Steerer, ok bool) {
	st, ok = b.(backend.Steerer)
	j, thread = s.running, s.rec.BackendID
	if !ok || j == nil || j.steerRefused || j.ended || j.source == SourceSummary || thread == "" || s.closing != nil || s.held != nil {
		return nil, "", nil, false
	}
	return j, thread, st, true
}

// TrySteerMail adds prompt (a batch of mail in its envelope) to the
// session's running turn, when its backend steers and auto-mail is on:
// the busy counterpart of TryMailThen, with its contract. It returns
// false, doing nothing, when it cannot (see steerTargetLocked); the mail
// layer then waits for the turn's end as before. When it returns true,
// report is called exactly once, on a goroutine of its own: true once the
// agent took the input (the mail layer marks the mail read), false when it
// did not or it is not known (the mail stays unread and is offered again:
// the mail layer is asked to check at once, and it goes as a turn once
// the running one has ended; a steer whose answer was lost may so arrive
// twice, never not at all). ended (optional) is called with the running
// turn's outcome once it has ended, when the input was taken.
func (s *Session) TrySteerMail(prompt string, report func(sent bool), ended func(*TurnResult, error)) bool {
	rec := s.Record()
	b, err := s.m.cat.of(rec)
	if err != nil || s.overBudget(SourceMail) != nil {
		return false // a token budget is used up: the mail waits unread (budget.go)
	}
	s.mu.Lock()
	j, thread, st, ok := s.steerTargetLocked(b)
	ok = ok && s.autoMail
	s.mu.Unlock()
	if !ok {
		return false
	}
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		err := s.steer(j, st, thread, prompt, SourceMail)
		if err == nil {
			if ended != nil {
				s.afterJob(j, ended)
			}
			report(true)
			return
		}
		report(false)
		if s.m.cfg.Mail != nil {
			s.m.cfg.Mail.Idle(rec.Identity) // offered again: as a turn, once this one has ended
		}
	}()
	return true
}

// SteerTurn adds t's prompt to the session's running turn (codex-reply
// with steer). On success it returns wait, which waits until that turn
// has ended and returns its result (which answers the prompt too) with
// Steered set; if wait's ctx ends first, it returns ctx's error and the
// turn goes on. wait is nil, with nothing done, when the prompt could not
// be steered (an idle session, a backend that does not steer, a turn that
// refused a steer already) or the agent did not take it (a
// *backend.SteerError: the turn ended first, a refusal): the caller runs
// it as a turn of its own. A steer whose outcome is not known (the agent's
// answer did not come, the child died) is an error.
func (s *Session) SteerTurn(t Turn) (wait func(context.Context) (*TurnResult, error), err error) {
	b, err := s.m.cat.of(s.Record())
	if err != nil {
		return nil, err
	}
	if s.overBudget(t.Source) != nil {
		return nil, nil // a token budget is used up: the turn it would be is refused (budget.go)
	}
	s.mu.Lock()
	j, thread, st, ok := s.steerTargetLocked(b)
	s.mu.Unlock()
	if !ok {
		return nil, nil
	}
	if t.Call != nil {
		t.Call.Release() // the agent's answer is a round trip
	}
	if err := s.steer(j, st, thread, t.Prompt, t.Source); err != nil {
		if errors.Is(err, backend.ErrNotSteered) || errors.Is(err, backend.ErrUnsupported) {
			return nil, nil
		}
		return nil, BackendError(s.Record().Kind(), err)
	}
	type out struct {
		r   *TurnResult
		err error
	}
	ch := make(chan out, 1)
	s.afterJob(j, func(r *TurnResult, err error) { ch <- out{r, err} })
	return func(ctx context.Context) (*TurnResult, error) {
		select {
		case o := <-ch:
			if o.r != nil {
				c := *o.r
				c.Steered = true
				o.r = &c
			}
			return o.r, o.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, nil
}

// steer asks st to add text to j's turn on thread and audits what came of
// it; a steer that was not taken (or whose outcome is unknown) marks j, so
// that nothing more is steered into it.
func (s *Session) steer(j *job, st backend.Steerer, thread, text string, src Source) error {
	ctx, cancel := context.WithTimeout(s.m.ctx, steerTimeout)
	err := st.Steer(ctx, thread, text)
	cancel()
	rec := s.Record()
	if err != nil {
		s.mu.Lock()
		j.steerRefused = true
		s.mu.Unlock()
		if errors.Is(err, backend.ErrUnsupported) {
			// The backend has a Steerer only for some children (Codex's
			// auto backend on mcp-server): nothing was asked.
			s.m.log.Debug("this agent cannot take input into a running turn", "agent_id", rec.AgentID)
			return err
		}
		s.m.log.Info("input not steered into the running turn; it goes as a turn of its own", "agent_id", rec.AgentID, "err", err)
		s.m.cfg.Audit.Turn(rec, src, text, "not steered into the running turn: "+err.Error())
		return err
	}
	s.m.log.Debug("input steered into the running turn", "agent_id", rec.AgentID, "source", src.String())
	s.m.cfg.Audit.Turn(rec, src, text, "steered into the running turn")
	return nil
}

// afterJob calls f with j's outcome once j has ended, at once when it has
// already (with the session's last outcome).
func (s *Session) afterJob(j *job, f func(*TurnResult, error)) {
	s.mu.Lock()
	if !j.ended {
		j.after = append(j.after, f)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	f(s.lastResult())
}

// jobEnded runs after j's done: the functions waiting for its end get its
// outcome (the last outcome recorded, for a turn answered from the
// backend's reader).
func (s *Session) jobEnded(j *job, res *TurnResult, err error) {
	s.mu.Lock()
	j.ended = true
	after := j.after
	j.after = nil
	s.mu.Unlock()
	if len(after) == 0 {
		return
	}
	if res == nil && (err == nil || errors.Is(err, ErrAnswered)) {
		res, err = s.lastResult()
	}
	for _, f := range after {
		f(res, err)
	}
}

// lastResult is the session's last outcome as a turn's result (or its
// error).
func (s *Session) lastResult() (*TurnResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, rec := s.last, s.rec
	if o == nil {
		return nil, errors.New("session: no turn has ended")
	}
	if o.err != nil {
		return nil, o.err
	}
	r := &TurnResult{AgentID: rec.AgentID, ThreadID: firstNonEmpty(o.threadID, rec.BackendID), Identity: rec.Identity, Text: o.text,
		Status: o.status, IsError: o.isError, Thread: o.thread, SubAgents: o.subAgents, SubAgentsNote: o.subAgentsNote,
		Output: o.output, OutputError: o.outputError, OutputHow: o.outputHow}
	if s.place != nil {
		c := *s.place
		r.Place = &c
	}
	return r, nil
}
