package codexchild

import (
	"context"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// Steer adds text to the running turn of a thread (turn/steer with the
// running turn's id as expectedTurnId). It waits, until ctx ends, for the
// turn id when turn/start has not been answered yet. nil means Codex took
// the input into that turn: the model reads it at its next request (the
// real Codex drops the model request in flight and sends a new one at
// once: measured on 0.171.0), and the turn's Result answers it too.
//
// A *backend.SteerError (errors.Is ErrNotSteered) means the input is certainly not
// in the turn: the thread has no running turn here, the turn ended first
// (also while the Turn call waits for the turn's sub-agents), or Codex
// refused it. Any other error (ctx ended while waiting for Codex's answer,
// the child died) leaves it unknown whether Codex took the input.
func (b *AppServer) Steer(ctx context.Context, threadID, text string) error {
	b.mu.Lock()
	t := b.turns[threadID]
	var why backend.SteerRefusal
	switch {
	case t == nil || t.abandoned != notAbandoned:
		why = backend.SteerNoTurn
	case t.completed != nil:
		why = backend.SteerTurnEnded
	}
	b.mu.Unlock()
	if why != "" {
		return &backend.SteerError{ThreadID: threadID, Why: why}
	}
	select {
	case <-t.started:
	case <-t.done:
		return &backend.SteerError{ThreadID: threadID, Why: backend.SteerTurnEnded}
	case <-ctx.Done():
		return fmt.Errorf("codexchild: steer thread %s: waiting for its turn to start: %w", threadID, ctx.Err())
	}
	b.mu.Lock()
	turnID := t.turnID
	b.mu.Unlock()
	resp, err := b.roundTrip(ctx, "turn/steer", map[string]any{
		"threadId": threadID, "expectedTurnId": turnID,
		"input": []map[string]any{{"type": "text", "text": text}},
	})
	if err != nil {
		return err
	}
	if e := resp.Err(); e != nil {
		b.log.Info("codex refused turn/steer", "thread", threadID, "turn", turnID, "err", e.Message)
		return &backend.SteerError{ThreadID: threadID, TurnID: turnID, Why: steerRefusal(e), Refusal: e}
	}
	return nil
}
