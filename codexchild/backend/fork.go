package backend

import (
	"context"
	"errors"
)

// Forker is what a backend that can start a thread from another thread's
// history offers (Codex app-server's thread/fork). A backend without it
// (Codex mcp-server, an ACP agent), or that has it only for some children
// (Codex's auto backend: ErrUnsupported on mcp-server), leaves the caller
// to start a new thread told the source's transcript or summary instead.
type Forker interface {
	// Fork starts a new thread whose history is the source thread's and
	// returns it; the source thread goes on unchanged. A turn running on
	// the source meanwhile is forked as far as it got. The new thread takes
	// turns as one that Turn started does (a Turn with its ThreadID). A
	// source the agent does not have, or refuses to fork, is an error
	// wrapping ErrForkRefused (and the agent's answer).
	Fork(ctx context.Context, req ForkRequest) (*ForkResult, error)
}

// ForkRequest is one fork.
type ForkRequest struct {
	// ThreadID is the source thread.
	ThreadID string
	// Params are the new thread's parameters, as for a thread Turn starts:
	// an agent may not keep a thread's config (its tool servers, say) with
	// its history, so they are given again. Empty fields take the source's
	// (its cwd, model, policies).
	Params ThreadParams
	// LastTurnID forks the history through that turn, leaving out the
	// later ones. optional: "" means the whole history.
	LastTurnID string
}

// ForkResult is the thread a fork made.
type ForkResult struct {
	// ThreadID is the new thread.
	ThreadID string
	// ForkedFrom is the source thread as the agent recorded it.
	ForkedFrom string
}

// ErrForkRefused: the agent refused to fork the thread (it has no such
// thread, not even in its storage; no such turn).
var ErrForkRefused = errors.New("fork refused")
