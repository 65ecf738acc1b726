package codexchild

import (
	"encoding/json"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

func TestAppDecision(t *testing.T) {
	for _, tc := range []struct {
		method string
		d      backend.Decision
		want   string
	}{
		{"item/commandExecution/requestApproval", backend.Decision{Kind: backend.Approve}, `{"decision":"accept"}`},
		{"item/commandExecution/requestApproval", backend.Decision{Kind: backend.ApproveForSession}, `{"decision":"acceptForSession"}`},
		{"item/commandExecution/requestApproval", backend.Decision{Kind: backend.Deny, Reason: "no"}, `{"decision":"decline"}`},
		{"item/fileChange/requestApproval", backend.Decision{Kind: backend.Abort}, `{"decision":"cancel"}`},
		{"item/fileChange/requestApproval", backend.Decision{Kind: "bogus"}, `{"decision":"decline"}`},
		{"execCommandApproval", backend.Decision{Kind: backend.Approve}, `{"decision":"approved"}`},
		{"applyPatchApproval", backend.Decision{Kind: backend.ApproveForSession}, `{"decision":"approved_for_session"}`},
		{"execCommandApproval", backend.Decision{Kind: backend.Deny}, `{"decision":{"denied":{"rejection":"denied by the user"}}}`},
		{"applyPatchApproval", backend.Decision{Kind: backend.Abort}, `{"decision":"abort"}`},
	} {
		got, _ := json.Marshal(appDecision(tc.method, tc.d))
		if string(got) != tc.want {
			t.Errorf("appDecision(%s, %+v) = %s, want %s", tc.method, tc.d, got, tc.want)
		}
	}
}

func TestAppCommandLine(t *testing.T) {
	for raw, want := range map[string]string{
		`"/bin/bash -lc 'touch mock_shell_probe.txt'"`: "touch mock_shell_probe.txt",
		`"/bin/bash -lc 'echo '\\''hi'\\'''"`:          "echo 'hi'",
		`"bash -lc ls"`:                                "ls",
		`"/bin/bash -lc 'a' 'b'"`:                      "/bin/bash -lc 'a' 'b'",
		`"git status"`:                                 "git status",
		`["/bin/bash","-lc","echo hi"]`:                "echo hi",
		``:                                             "",
	} {
		if got := appCommandLine(json.RawMessage(raw)); got != want {
			t.Errorf("appCommandLine(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestThreadParams(t *testing.T) {
	cfg := map[string]any{"mcp_servers": map[string]any{"atm": map[string]any{"command": "x"}}}
	got := threadParams(backend.ThreadParams{
		Cwd: "/w", Model: "o3", BaseInstructions: "base", DeveloperInstructions: "dev",
		Options: Options{ApprovalPolicy: "on-request", Sandbox: "read-only", CompactPrompt: "compact", Profile: "p", Config: cfg},
	})
	want := map[string]any{
		"cwd": "/w", "model": "o3", "approvalPolicy": "on-request", "sandbox": "read-only",
		"baseInstructions": "base", "developerInstructions": "dev",
		"config": map[string]any{"mcp_servers": cfg["mcp_servers"], "compact_prompt": "compact", "profile": "p"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(cfg) != 1 {
		t.Errorf("the caller's Config was changed: %v", cfg)
	}
	if diff := cmp.Diff(map[string]any{}, threadParams(backend.ThreadParams{})); diff != "" {
		t.Errorf("empty params (-want +got):\n%s", diff)
	}
}

func TestUserAgentVersion(t *testing.T) {
	for ua, want := range map[string]string{
		"atm-agent-mcp/0.169.0 (Debian 12.0.0; x86_64) xterm (atm-agent-mcp; dev)": "0.169.0",
		"codex_vscode/0.170.1-alpha.2 (Mac OS 15.1; arm64)":                        "0.170.1-alpha.2",
		"probe (no version)": "",
		"":                   "",
	} {
		if got := userAgentVersion(ua); got != want {
			t.Errorf("userAgentVersion(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestAppResult(t *testing.T) {
	for _, tc := range []struct {
		name, raw, last, errMsg, partial string
		aborted                          bool
		want                             backend.Result
	}{
		{"completed", `{"turn":{"id":"U","status":"completed","items":[{"type":"agentMessage","text":"one"},{"type":"reasoning"},{"type":"agentMessage","text":"two"}]}}`, "", "", "", false,
			backend.Result{TurnID: "U", Text: "two", Status: "completed"}},
		{"completed_without_items", `{"turn":{"id":"U","status":"completed","items":[]}}`, "seen", "", "", false,
			backend.Result{TurnID: "U", Text: "seen", Status: "completed"}},
		{"failed", `{"turn":{"id":"U","status":"failed","error":{"message":"boom"}}}`, "", "other", "", false,
			backend.Result{TurnID: "U", Text: "boom", Status: "failed", IsError: true}},
		{"failed_error_event", `{"turn":{"id":"U","status":"failed","error":null}}`, "", "from the event", "", false,
			backend.Result{TurnID: "U", Text: "from the event", Status: "failed", IsError: true}},
		{"interrupted", `{"turn":{"id":"U","status":"interrupted"}}`, "", "", "half", false,
			backend.Result{TurnID: "U", Text: "codex turn interrupted", Status: "interrupted", IsError: true, Partial: "half"}},
		{"aborted", `{"turn":{"id":"U","status":"interrupted"}}`, "", "", "", true,
			backend.Result{TurnID: "U", Text: "codex turn aborted (approval answered with abort)", Status: "interrupted", IsError: true}},
	} {
		got := appResult(json.RawMessage(tc.raw), "T", "", tc.last, tc.errMsg, tc.partial, tc.aborted)
		tc.want.ThreadID = "T"
		if diff := cmp.Diff(&tc.want, got, cmpResult); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
