package acp

import (
	"context"
	"encoding/json"
	"fmt"
)

// Steering is an extension of ACP v1 (claude-agent-acp advertises it as
// the initialize result's _meta.steering.supported): _session/steering
// {sessionId, prompt} hands the running turn more input, as Codex's
// turn/steer does, instead of queueing a prompt behind it. The client asks
// with idleBehavior "promptRequired", so that an agent whose turn has
// ended answers {"outcome":"promptRequired"} and starts nothing; without
// it, claude-agent-acp starts a turn of its own that no prompt of this
// client would own. Measured on claude-agent-acp 0.101.0 (offline, a
// scripted model): sent while a permission request is open, the input
// waits for its answer; the model reads the tool's result, answers, then
// reads the input in a request of its own, all within the same turn, whose
// last message answers the input.

// steerParams is the request of _session/steering.
type steerParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
	Meta      steerMeta      `json:"_meta"`
}

type steerMeta struct {
	Steering struct {
		IdleBehavior string `json:"idleBehavior"`
	} `json:"steering"`
}

// steerResult is its answer: "injected", or "promptRequired" when no turn
// runs ("startedNewTurn" from an agent that ignores idleBehavior).
type steerResult struct {
	Outcome string `json:"outcome"`
}

// Steer adds text to the session's running turn (the steering
// extension). It reports whether the agent took it into that turn: false
// when no turn runs (nothing was started). An agent that does not
// advertise steering is ErrUnsupported.
func (s *Session) Steer(ctx context.Context, text string) (bool, error) {
	c := s.c
	if !c.info.Capabilities.Steering {
		return false, fmt.Errorf("acp %s: %w", methodSteer, ErrUnsupported)
	}
	p := steerParams{SessionID: s.id, Prompt: []contentBlock{{Type: "text", Text: text}}}
	p.Meta.Steering.IdleBehavior = "promptRequired"
	raw, err := c.call(ctx, methodSteer, p, c.cfg.callTimeout(), nil)
	if err != nil {
		return false, err
	}
	var res steerResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return false, fmt.Errorf("acp %s result: %w", methodSteer, err)
	}
	return res.Outcome == "injected", nil
}

// steeringOf reads the initialize result's _meta for the steering
// extension.
func steeringOf(meta json.RawMessage) bool {
	var m struct {
		Steering struct {
			Supported bool `json:"supported"`
		} `json:"steering"`
	}
	return len(meta) > 0 && json.Unmarshal(meta, &m) == nil && m.Steering.Supported
}
