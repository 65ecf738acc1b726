package session

import (
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		answer, reason string
		want           backend.Decision
		wantErr        bool
	}{
		{"approve", "", backend.Decision{Kind: backend.Approve}, false},
		{" Yes ", "", backend.Decision{Kind: backend.Approve}, false},
		{"approve_for_session", "", backend.Decision{Kind: backend.ApproveForSession}, false},
		{"deny", "", backend.Decision{Kind: backend.Deny, Reason: "denied by the orchestrator"}, false},
		{"deny: too risky", "", backend.Decision{Kind: backend.Deny, Reason: "too risky"}, false},
		{"decline", "not now", backend.Decision{Kind: backend.Deny, Reason: "not now"}, false},
		{"cancel", "", backend.Decision{Kind: backend.Deny, Reason: "the approval request was dismissed by the orchestrator; the action was not run"}, false},
		{"abort", "", backend.Decision{Kind: backend.Abort, Reason: "aborted by the orchestrator"}, false},
		{"maybe", "", backend.Decision{}, true},
	}
	for _, tt := range tests {
		got, err := ParseAnswer(tt.answer, tt.reason)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseAnswer(%q, %q) error %v, want error %v", tt.answer, tt.reason, err, tt.wantErr)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseAnswer(%q, %q) (-want +got):\n%s", tt.answer, tt.reason, diff)
		}
	}
}
