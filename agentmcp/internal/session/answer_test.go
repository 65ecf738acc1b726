package session

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
)

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		answer, reason string
		want           codexchild.Decision
		wantErr        bool
	}{
		{"approve", "", codexchild.Decision{Kind: codexchild.Approve}, false},
		{" Yes ", "", codexchild.Decision{Kind: codexchild.Approve}, false},
		{"approve_for_session", "", codexchild.Decision{Kind: codexchild.ApproveForSession}, false},
		{"deny", "", codexchild.Decision{Kind: codexchild.Deny, Reason: "denied by the orchestrator"}, false},
		{"deny: too risky", "", codexchild.Decision{Kind: codexchild.Deny, Reason: "too risky"}, false},
		{"decline", "not now", codexchild.Decision{Kind: codexchild.Deny, Reason: "not now"}, false},
		{"cancel", "", codexchild.Decision{Kind: codexchild.Deny, Reason: "the approval request was dismissed by the orchestrator; the action was not run"}, false},
		{"abort", "", codexchild.Decision{Kind: codexchild.Abort, Reason: "aborted by the orchestrator"}, false},
		{"maybe", "", codexchild.Decision{}, true},
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
