package backend

import (
	"errors"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// This file is what a caller of Steerer.Steer learns when the input did
// not reach the running turn. Mail uses it: mail that Steer took is marked
// read; mail it did not take (a *SteerError) is delivered as a turn of its
// own once the running one has ended.

// ErrNotSteered is wrapped by *SteerError: the input given to Steer is
// certainly not in the running turn (the agent did not take it), so the
// caller can deliver it another way, as the next turn.
var ErrNotSteered = errors.New("input not added to a running turn")

// SteerRefusal says why Steer did not add the input.
type SteerRefusal string

// The reasons a steer was not taken.
const (
	// SteerNoTurn: the thread has no running turn (none was started on it
	// here, or its turn was interrupted or timed out).
	SteerNoTurn SteerRefusal = "no_turn"
	// SteerTurnEnded: the turn ended before the agent took the input.
	SteerTurnEnded SteerRefusal = "turn_ended"
	// SteerRefused: the agent refused the input for another reason; its
	// answer is in SteerError.Refusal.
	SteerRefused SteerRefusal = "refused"
)

// SteerError reports input that Steer did not add to a running turn. It
// wraps ErrNotSteered, and the agent's answer when there was one.
type SteerError struct {
	ThreadID string
	// TurnID is the turn that was steered, when the backend knew it.
	TurnID string
	Why    SteerRefusal
	// Refusal is the agent's answer to the steer; nil when nothing was
	// sent.
	Refusal *jsonrpcframe.Error
}

// Error says which thread and why: "steer thread T: turn_ended: no active
// turn to steer".
func (e *SteerError) Error() string {
	msg := "steer thread " + e.ThreadID + ": " + string(e.Why)
	if e.Refusal != nil {
		msg += ": " + e.Refusal.Message
	}
	return msg
}

// Unwrap returns ErrNotSteered and the agent's error when there is one.
func (e *SteerError) Unwrap() []error {
	if e.Refusal != nil {
		return []error{ErrNotSteered, e.Refusal}
	}
	return []error{ErrNotSteered}
}
