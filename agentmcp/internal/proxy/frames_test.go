package proxy

import (
	"errors"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/google/go-cmp/cmp"
)

// TestIdleNotification: how a mail turn's end reads to its senders.
func TestIdleNotification(t *testing.T) {
	tests := []struct {
		name string
		r    *session.TurnResult
		err  error
		want atmclient.IdleNotification
	}{
		{"completed", &session.TurnResult{Status: "completed", Text: "Done: the plan has 3 steps.\nStep 1 …"}, nil,
			atmclient.IdleNotification{From: "codex1", IdleReason: "available", Summary: "Done: the plan has 3 steps.",
				Result: "Done: the plan has 3 steps.\nStep 1 …"}},
		{"completed, empty", &session.TurnResult{Status: "completed"}, nil,
			atmclient.IdleNotification{From: "codex1", IdleReason: "available", Summary: "turn completed"}},
		{"interrupted", &session.TurnResult{Status: "interrupted", Text: "codex turn interrupted", IsError: true}, nil,
			atmclient.IdleNotification{From: "codex1", IdleReason: "interrupted", Summary: "turn interrupted", Result: "codex turn interrupted"}},
		{"failed", &session.TurnResult{Status: "failed", Text: "model overloaded", IsError: true}, nil,
			atmclient.IdleNotification{From: "codex1", IdleReason: "failed", Summary: "turn failed", Result: "model overloaded"}},
		{"error", nil, errors.New("codex turn timed out after 10m0s"),
			atmclient.IdleNotification{From: "codex1", IdleReason: "failed", Summary: "turn failed", Result: "codex turn timed out after 10m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := idleNotification("codex1", tt.r, tt.err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("idleNotification (-want +got):\n%s", diff)
			}
		})
	}
}
