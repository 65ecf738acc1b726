package codexchild

import (
	"errors"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// This file is what a caller of Steerer.Steer learns when the input did
// not reach the running turn. Mail uses it: mail that Steer took is marked
// read; mail it did not take (a *SteerError) is delivered as a turn of its
// own once the running one has ended.

// ErrNotSteered is wrapped by *SteerError: the input given to Steer is
// certainly not in the running turn (Codex did not take it), so the caller
// can deliver it another way, as the next turn.
var ErrNotSteered = errors.New("input not added to a running turn")

// SteerRefusal says why Steer did not add the input.
type SteerRefusal string

// The reasons a steer was not taken.
const (
	// SteerNoTurn: the thread has no running turn (none was started on it
	// here, or its turn was interrupted or timed out).
	SteerNoTurn SteerRefusal = "no_turn"
	// SteerTurnEnded: the turn ended before Codex took the input (Codex
	// answered "no active turn to steer", or named another turn).
	SteerTurnEnded SteerRefusal = "turn_ended"
	// SteerRefused: Codex refused the input for another reason; its
	// answer is in SteerError.Codex.
	SteerRefused SteerRefusal = "refused"
)

// SteerError reports input that Steer did not add to a running turn. It
// wraps ErrNotSteered, and Codex's answer when there was one.
type SteerError struct {
	ThreadID string
	// TurnID is the turn that was steered, when the backend knew it.
	TurnID string
	Why    SteerRefusal
	// Codex is Codex's refusal of turn/steer; nil when nothing was sent.
	Codex *jsonrpcframe.Error
}

// Error says which thread and why: "steer thread T: turn_ended: no active
// turn to steer".
func (e *SteerError) Error() string {
	msg := "codexchild: steer thread " + e.ThreadID + ": " + string(e.Why)
	if e.Codex != nil {
		msg += ": " + e.Codex.Message
	}
	return msg
}

// Unwrap returns ErrNotSteered and Codex's error when there is one.
func (e *SteerError) Unwrap() []error {
	if e.Codex != nil {
		return []error{ErrNotSteered, e.Codex}
	}
	return []error{ErrNotSteered}
}

// steerRefusal reads Codex's refusal of turn/steer: the running turn had
// ended ("no active turn to steer", "expected active turn id `X` but found
// `Y`": measured on 0.171.0) or something else was wrong.
func steerRefusal(e *jsonrpcframe.Error) SteerRefusal {
	switch {
	case strings.HasPrefix(e.Message, "no active turn"), strings.HasPrefix(e.Message, "expected active turn id"):
		return SteerTurnEnded
	case strings.HasPrefix(e.Message, "thread not found"):
		return SteerNoTurn
	}
	return SteerRefused
}
