package codexchild

import (
	"encoding/json"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

func TestMCPDecision(t *testing.T) {
	for _, tc := range []struct {
		version string
		d       backend.Decision
		want    string
	}{
		{"0.153.4", backend.Decision{Kind: backend.Approve}, `{"action":"accept","content":{},"decision":"approved"}`},
		{"0.104.0", backend.Decision{Kind: backend.Approve}, `{"action":"accept","content":{},"decision":"approved"}`},
		{"0.153.4", backend.Decision{Kind: backend.ApproveForSession}, `{"action":"accept","content":{},"decision":"approved_for_session"}`},
		{"0.153.4", backend.Decision{Kind: backend.Deny, Reason: "no"}, `{"action":"decline","decision":{"denied":{"rejection":"no"}}}`},
		{"0.153.4", backend.Decision{Kind: backend.Deny}, `{"action":"decline","decision":{"denied":{"rejection":"denied by the user"}}}`},
		{"0.104.0", backend.Decision{Kind: backend.Deny, Reason: "no"}, `{"action":"decline","decision":"denied"}`},
		{"", backend.Decision{Kind: backend.Deny, Reason: "no"}, `{"action":"decline","decision":{"denied":{"rejection":"no"}}}`},
		{"1.2.0", backend.Decision{Kind: backend.Deny, Reason: "no"}, `{"action":"decline","decision":{"denied":{"rejection":"no"}}}`},
		{"0.153.4", backend.Decision{Kind: backend.Abort}, `{"action":"cancel","decision":"abort"}`},
		{"0.153.4", backend.Decision{Kind: "bogus"}, `{"action":"decline","decision":{"denied":{"rejection":"denied by the user"}}}`},
	} {
		got := mcpDecision(tc.version, tc.d)
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(tc.want), &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("mcpDecision(%q, %+v) (-want +got):\n%s", tc.version, tc.d, diff)
		}
	}
}

func TestApprovalFromElicitation(t *testing.T) {
	raw := json.RawMessage(`{"message":"Allow?","requestedSchema":{"type":"object","properties":{}},"threadId":"T","codex_elicitation":"exec-approval","codex_mcp_tool_call_id":"2","codex_event_id":"E","codex_call_id":"call_5","codex_command":["/bin/bash","-lc","touch a b"],"codex_cwd":"/w","codex_parsed_cmd":[]}`)
	a, p, ok := approvalFromElicitation(raw)
	if !ok || p.ToolCallID != "2" {
		t.Fatalf("not an approval: %+v", p)
	}
	want := backend.Approval{Kind: backend.ApprovalExec, ThreadID: "T", TurnID: "E", CallID: "call_5", Message: "Allow?", Command: "touch a b", Cwd: "/w", Raw: raw}
	if diff := cmp.Diff(want, a, cmp.AllowUnexported(backend.Approval{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, _, ok := approvalFromElicitation(json.RawMessage(`{"message":"form","requestedSchema":{}}`)); ok {
		t.Error("a plain MCP elicitation was taken for an approval")
	}
	for argv, want := range map[string]string{
		`["/bin/bash","-lc","echo hi"]`: "echo hi",
		`["git","commit","-m","a b"]`:   "git commit -m 'a b'",
		`["echo","it's"]`:               `echo 'it'\''s'`,
	} {
		if got := commandLine(json.RawMessage(argv)); got != want {
			t.Errorf("commandLine(%s) = %q, want %q", argv, got, want)
		}
	}
}
