package acp

import (
	"context"
	"encoding/json"
	"fmt"
)

// Decision is the answer to a permission request, in ACP's option kinds
// (plus Cancelled). The client turns it into the option whose kind
// matches; option ids differ between agents (allow-once, proceed_once,
// allow_once, …) and are never matched.
type Decision string

// The decisions.
const (
	AllowOnce    Decision = "allow_once"
	AllowAlways  Decision = "allow_always"
	RejectOnce   Decision = "reject_once"
	RejectAlways Decision = "reject_always"
	// Cancelled answers {"outcome":"cancelled"}: what ACP requires for
	// every pending request after session/cancel.
	Cancelled Decision = "cancelled"
)

// PermissionOption is one option the agent offers.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// PermissionRequest is a session/request_permission of the agent.
type PermissionRequest struct {
	// ID is the client's own name for the request ("permission-1", …),
	// unique for the client's life.
	ID        string
	SessionID string
	Turn      int64
	// Tool is the tool call the agent asks about (possibly one it never
	// announced with tool_call).
	Tool    ToolCall
	Options []PermissionOption
	// Raw are the request params as sent.
	Raw json.RawMessage
}

// Asker decides permission requests; the consumer implements it (the
// approval bridge, a policy, a test). Ask is called on a goroutine of its
// own and may wait for a person; ctx ends when the answer is no longer
// wanted (the turn was interrupted or ended, the agent died, the client
// closed), and the client has then answered Cancelled itself.
type Asker interface {
	Ask(ctx context.Context, req PermissionRequest) Decision
}

// AskerFunc is a function that is an Asker.
type AskerFunc func(ctx context.Context, req PermissionRequest) Decision

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, req PermissionRequest) Decision { return f(ctx, req) }

// fallbacks are the option kinds tried for a decision, in order. An allow
// is never widened (allow_once does not fall back to allow_always, which
// the agent may remember for the session): it is narrowed to a rejection
// instead. A rejection falls back to the other rejection.
var fallbacks = map[Decision][]string{
	AllowOnce:    {"allow_once", "reject_once", "reject_always"},
	AllowAlways:  {"allow_always", "allow_once", "reject_once", "reject_always"},
	RejectOnce:   {"reject_once", "reject_always"},
	RejectAlways: {"reject_always", "reject_once"},
}

// selectOption returns the option id that answers d, and the kind it has;
// "" when d is Cancelled, unknown, or no option fits (the answer is then
// cancelled).
func selectOption(opts []PermissionOption, d Decision) (id, kind string) {
	for _, k := range fallbacks[d] {
		for _, o := range opts {
			if o.Kind == k && o.OptionID != "" {
				return o.OptionID, k
			}
		}
	}
	return "", ""
}

// permissionOutcome is the result of session/request_permission.
func permissionOutcome(optionID string) any {
	type outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId,omitempty"`
	}
	o := outcome{Outcome: "cancelled"}
	if optionID != "" {
		o = outcome{Outcome: "selected", OptionID: optionID}
	}
	return struct {
		Outcome outcome `json:"outcome"`
	}{o}
}

// parsePermission reads the params of session/request_permission.
func parsePermission(params json.RawMessage) (PermissionRequest, error) {
	var p struct {
		SessionID string             `json:"sessionId"`
		ToolCall  json.RawMessage    `json:"toolCall"`
		Options   []PermissionOption `json:"options"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return PermissionRequest{}, fmt.Errorf("acp: session/request_permission params: %w", err)
	}
	req := PermissionRequest{SessionID: p.SessionID, Options: p.Options, Raw: params}
	if len(p.ToolCall) > 0 {
		var t struct {
			ToolCallID string          `json:"toolCallId"`
			Title      string          `json:"title"`
			Kind       string          `json:"kind"`
			Status     string          `json:"status"`
			RawInput   json.RawMessage `json:"rawInput"`
		}
		if err := json.Unmarshal(p.ToolCall, &t); err == nil {
			req.Tool = ToolCall{ID: t.ToolCallID, Title: t.Title, Kind: t.Kind, Status: t.Status, RawInput: t.RawInput}
		}
	}
	return req, nil
}
