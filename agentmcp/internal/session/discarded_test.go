package session

import (
	"fmt"
	"testing"
)

// TestDiscardLogBounded: the log keeps the last discardedLimit sessions,
// forgets the oldest first, and finds the latest record of an agent_id.
func TestDiscardLogBounded(t *testing.T) {
	var l discardLog
	for i := range discardedLimit + 5 {
		l.add(discardedSession{agentID: fmt.Sprintf("codex-%d", i), reason: fmt.Sprintf("why %d", i)})
	}
	l.add(discardedSession{agentID: "codex-50", reason: "again"})
	tests := []struct {
		agentID string
		found   bool
		reason  string
	}{
		{"codex-0", false, ""},
		{"codex-5", false, ""}, // the oldest beyond the limit: forgotten
		{"codex-6", true, "why 6"},
		{"codex-50", true, "again"}, // the latest record wins
		{fmt.Sprintf("codex-%d", discardedLimit+4), true, fmt.Sprintf("why %d", discardedLimit+4)},
		{"codex-nope", false, ""},
	}
	for _, tt := range tests {
		got, ok := l.find(tt.agentID)
		if ok != tt.found || got.reason != tt.reason {
			t.Errorf("find(%s) = %q, %v; want %q, %v", tt.agentID, got.reason, ok, tt.reason, tt.found)
		}
	}
	if len(l.ring) != discardedLimit {
		t.Errorf("%d records kept, want %d", len(l.ring), discardedLimit)
	}
}
