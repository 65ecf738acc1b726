package tools

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// TestActivityNote: the keep-alive progress says what the agent is doing:
// an approval it waits for, Codex retrying the model, the command, patch
// or tool call that runs, or just that it works.
func TestActivityNote(t *testing.T) {
	tests := []struct {
		name string
		w    doing
		want string
	}{
		{"nothing known", doing{identity: "arch"}, "[arch] working (1m5s into the turn)"},
		{"a command", doing{identity: "arch", itemType: "command", itemSummary: "make test"}, "[arch] running `make test` (1m5s into the turn)"},
		{"a patch", doing{identity: "arch", itemType: "file_change", itemSummary: "2 files"}, "[arch] applying a patch (2 files) (1m5s into the turn)"},
		{"a tool", doing{identity: "arch", itemType: "tool_call", itemSummary: "atm.atm_send"}, "[arch] calling atm.atm_send (1m5s into the turn)"},
		{"an approval first", doing{identity: "arch", approval: "rm -rf build", itemType: "command", itemSummary: "rm -rf build"},
			"[arch] waiting for approval: rm -rf build (1m5s into the turn)"},
		{"codex retries", doing{identity: "arch", retrying: "Reconnecting... 2/5"},
			"[arch] Codex cannot reach the model: Reconnecting... 2/5 (retrying) (1m5s into the turn)"},
	}
	for _, tt := range tests {
		if got := tt.w.note(65*time.Second + 200*time.Millisecond); got != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.name, got, tt.want)
		}
	}
	d := session.Detail{Identity: "qa", PendingApprovals: []session.ApprovalView{{Question: "Allow Codex to apply proposed code changes?"}},
		CodexProblem: &session.Problem{Message: "stream error", Retrying: false}}
	if diff := cmp.Diff(doing{identity: "qa", approval: "Allow Codex to apply proposed code changes?"}, doingOf(d), cmp.AllowUnexported(doing{})); diff != "" {
		t.Errorf("doingOf (-want +got):\n%s", diff)
	}
	for status, want := range map[string]bool{"running": true, "inProgress": true, "completed": false, "failed (exit 1)": false} {
		if running(status) != want {
			t.Errorf("running(%q) = %v", status, !want)
		}
	}
}
