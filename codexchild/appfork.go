package codexchild

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

var _ backend.Forker = (*AppServer)(nil)

// Fork starts a new thread from the source thread's history with
// thread/fork (without the history in the answer: excludeTurns). Codex
// reads the source from its storage, so a thread of an earlier process
// forks too.
func (b *AppServer) Fork(ctx context.Context, req backend.ForkRequest) (*backend.ForkResult, error) {
	if err := b.ensureStarted(ctx); err != nil {
		return nil, err
	}
	params := threadParams(req.Params)
	params["threadId"] = req.ThreadID
	params["excludeTurns"] = true
	if req.LastTurnID != "" {
		params["lastTurnId"] = req.LastTurnID
	}
	resp, err := b.roundTrip(ctx, "thread/fork", params)
	if err != nil {
		return nil, err
	}
	if e := resp.Err(); e != nil {
		b.log.Info("codex refused to fork the thread", "thread", req.ThreadID, "err", e.Message)
		return nil, fmt.Errorf("codexchild: fork thread %s: %w: %w", req.ThreadID, backend.ErrForkRefused, e)
	}
	var r struct {
		Thread struct {
			ID         string `json:"id"`
			ForkedFrom string `json:"forkedFromId"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil || r.Thread.ID == "" {
		return nil, fmt.Errorf("codexchild: thread/fork: bad result %.200s", resp.Result)
	}
	b.mu.Lock()
	b.loaded[r.Thread.ID] = true
	b.mu.Unlock()
	b.log.Info("codex thread forked", "thread", r.Thread.ID, "from", req.ThreadID)
	return &backend.ForkResult{ThreadID: r.Thread.ID, ForkedFrom: r.Thread.ForkedFrom}, nil
}
