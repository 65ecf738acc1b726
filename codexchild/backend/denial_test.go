package backend

import "testing"

// TestDenialNote: what an agent is told of a denial its protocol cannot
// give the reason of: who or what decided, naming the action; nothing for
// an approval or a denial without a reason.
func TestDenialNote(t *testing.T) {
	tests := []struct {
		name string
		a    Approval
		d    Decision
		want string
	}{
		{"a command, nobody asked", Approval{Kind: ApprovalExec, Command: "touch x"}, Decision{Kind: Deny, Reason: "no one was asked "},
			"[atm-agent-mcp: the approval for `touch x` was denied: no one was asked. Whatever the tool result says about a user, this is who or what decided.]"},
		{"a patch", Approval{Kind: ApprovalPatch}, Decision{Kind: Deny, Reason: "declined in the MCP client, without a reason"},
			"[atm-agent-mcp: the approval for the file changes was denied: declined in the MCP client, without a reason. Whatever the tool result says about a user, this is who or what decided.]"},
		{"a tool", Approval{Kind: ApprovalTool, Message: "Allow mcp__atm__atm_send?"}, Decision{Kind: Deny, Reason: "not today"},
			"[atm-agent-mcp: the approval for Allow mcp__atm__atm_send? was denied: not today. Whatever the tool result says about a user, this is who or what decided.]"},
		{"a denial without a reason", Approval{Kind: ApprovalExec, Command: "ls"}, Decision{Kind: Deny}, ""},
		{"an approval", Approval{Kind: ApprovalExec, Command: "ls"}, Decision{Kind: Approve, Reason: "fine"}, ""},
		{"an abort", Approval{Kind: ApprovalExec, Command: "ls"}, Decision{Kind: Abort, Reason: "stop"}, ""},
		{"a denial as the turn ends", Approval{Kind: ApprovalExec, Command: "ls"}, Decision{Kind: Deny, Reason: "the session is being closed", TurnEnds: true}, ""},
	}
	for _, tt := range tests {
		if got := DenialNote(&tt.a, tt.d); got != tt.want {
			t.Errorf("%s: DenialNote = %q, want %q", tt.name, got, tt.want)
		}
	}
}
