package mockcodex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The event types of mcp_elicit_decision_approved.jsonl (0.153.4) around the
// approval, the elicitation/create request included.
var recordedApproved = []string{"session_configured", "mcp_startup_complete", "warning", "task_started",
	"raw_response_item", "raw_response_item", "raw_response_item", "item_started", "item_completed", "user_message",
	"raw_response_item", "raw_response_completed", "exec_approval_request", "elicitation/create"}

var recordedAfterApproved = []string{"item_started", "exec_command_begin", "item_completed", "exec_command_end",
	"raw_response_item", "token_count", "item_started", "agent_message_content_delta", "agent_message_content_delta",
	"item_completed", "agent_message", "raw_response_item", "raw_response_completed", "token_count", "task_complete"}

func rejected(r string) string {
	return `MOCK_DONE: tool output was: exec_command failed: CreateProcess { message: "Rejected(\"` + r + `\")" }`
}

func TestMCPExecApproval(t *testing.T) {
	tests := []struct {
		name     string
		answer   string // the elicitation response's result or error member
		ran      bool
		text     string // the final text, or its prefix when ran
		noResult bool
		rules    bool
	}{
		{name: "approved", answer: `"result":{"decision":"approved"}`, ran: true, text: "MOCK_DONE: tool output was: Chunk ID: "},
		{name: "approved_for_session", answer: `"result":{"decision":"approved_for_session"}`, ran: true, text: "MOCK_DONE: tool output was: Chunk ID: "},
		{name: "portable approve", answer: `"result":{"action":"accept","content":{},"decision":"approved"}`, ran: true, text: "MOCK_DONE: tool output was: Chunk ID: "},
		{name: "execpolicy amendment", answer: `"result":{"decision":{"approved_execpolicy_amendment":{"proposed_execpolicy_amendment":["touch","mock_shell_probe.txt"]}}}`,
			ran: true, text: "MOCK_DONE: tool output was: Chunk ID: ", rules: true},
		{name: "denied struct", answer: `"result":{"decision":{"denied":{"rejection":"probe says no"}}}`, text: rejected("probe says no")},
		{name: "denied string", answer: `"result":{"decision":"denied"}`, text: rejected("approval request failed")},
		{name: "timed_out", answer: `"result":{"decision":"timed_out"}`, text: truncate("MOCK_DONE: tool output was: "+strings.TrimPrefix(rejectedText(textTimedOut), ""), 228)},
		{name: "mcp accept", answer: `"result":{"action":"accept","content":{}}`, text: rejected("approval request failed")},
		{name: "Approved", answer: `"result":{"decision":"Approved"}`, text: rejected("approval request failed")},
		{name: "abort", answer: `"result":{"decision":"abort"}`, noResult: true},
		{name: "JSON-RPC error", answer: `"error":{"code":-32000,"message":"client rejected elicitation"}`, noResult: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t)
			c := start(t, env, "mcp-server")
			c.initialize()
			work := t.TempDir()
			c.call(2, "codex", msg{"prompt": "RUN_SHELL ESCALATE please", "cwd": work, "approval-policy": "on-request", "sandbox": "workspace-write"})
			evs := c.until(5*time.Second, func(m msg) bool { return m["method"] == "elicitation/create" })
			if diff := cmp.Diff(recordedApproved, types(evs)); diff != "" {
				t.Errorf("events up to the elicitation (-recorded +got):\n%s", diff)
			}
			req := evs[len(evs)-1]
			params := req["params"].(msg)
			callID := params["codex_call_id"].(string)
			want := msg{"message": "Allow Codex to run `/bin/bash -lc 'touch mock_shell_probe.txt'` in `" + work + "`?",
				"requestedSchema": msg{"type": "object", "properties": msg{}}, "threadId": evs[0]["params"].(msg)["_meta"].(msg)["threadId"],
				"codex_elicitation": "exec-approval", "codex_mcp_tool_call_id": "2", "codex_event_id": findEvent(evs, "task_started")["turn_id"],
				"codex_call_id": callID, "codex_command": []any{"/bin/bash", "-lc", "touch mock_shell_probe.txt"}, "codex_cwd": work,
				"codex_parsed_cmd": []any{msg{"type": "unknown", "cmd": "touch mock_shell_probe.txt"}}}
			if diff := cmp.Diff(want, params); diff != "" {
				t.Errorf("elicitation params (-want +got):\n%s", diff)
			}
			if req["id"] != 0.0 {
				t.Errorf("first server request id = %v, want 0", req["id"])
			}
			c.send(`{"jsonrpc":"2.0","id":0,` + tt.answer + `}`)
			marker := filepath.Join(work, "mock_shell_probe.txt")
			if tt.noResult {
				if tt.name == "abort" {
					evs = c.until(5*time.Second, func(m msg) bool { return evType(m) == "turn_aborted" })
					if got := findEvent(evs, "turn_aborted")["reason"]; got != "interrupted" {
						t.Errorf("turn_aborted reason = %v", got)
					}
				}
				c.quiet(300 * time.Millisecond)
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the command ran")
				}
				return
			}
			evs, res := c.response(2)
			if tt.ran {
				if diff := cmp.Diff(recordedAfterApproved, types(evs)); diff != "" {
					t.Errorf("events after the answer (-recorded +got):\n%s", diff)
				}
			}
			got := resultText(res)
			if tt.ran && !strings.HasPrefix(got, tt.text) || !tt.ran && got != tt.text {
				t.Errorf("final text = %q, want %q", got, tt.text)
			}
			if _, err := os.Stat(marker); (err == nil) != tt.ran {
				t.Errorf("marker exists = %v, want %v", err == nil, tt.ran)
			}
			if _, err := os.Stat(filepath.Join(env["CODEX_HOME"], "rules", "default.rules")); (err == nil) != tt.rules {
				t.Errorf("rules file exists = %v, want %v", err == nil, tt.rules)
			}
		})
	}
}

func TestMCPShellWithoutApproval(t *testing.T) {
	c := start(t, testEnv(t), "mcp-server")
	c.initialize()
	work := t.TempDir()
	tests := []struct {
		name, prompt, policy, want string
	}{
		{"never with escalation", "RUN_SHELL ESCALATE please", "never", "MOCK_DONE: tool output was: " + textNeverEsc},
		{"on-request without escalation runs", "RUN_SHELL CMD=echo hello-$((40+2))", "on-request", "MOCK_DONE: tool output was: Chunk ID: "},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.call(i+2, "codex", msg{"prompt": tt.prompt, "cwd": work, "approval-policy": tt.policy})
			evs, res := c.response(i + 2)
			for _, e := range evs {
				if e["method"] == "elicitation/create" {
					t.Fatalf("unexpected elicitation")
				}
			}
			if got := resultText(res); !strings.HasPrefix(got, tt.want) {
				t.Errorf("text = %q, want prefix %q", got, tt.want)
			}
			if i == 1 && !strings.HasSuffix(resultText(res), "Process exited with code 0\nOriginal token count: 3\nOutput:\nhello-42\n") {
				t.Errorf("text = %q lacks the command output", resultText(res))
			}
		})
	}
}

func TestMCPPatch(t *testing.T) {
	c := start(t, testEnv(t), "mcp-server")
	c.initialize()
	work := t.TempDir()
	outside := filepath.Join(filepath.Dir(c.home), "outside", "probe.txt") // CODEX_HOME's parent: outside work
	// t.TempDir is under /tmp, a writable root; use the home's sibling only
	// when it is not under a writable root.
	t.Run("inside the workspace: applied without approval", func(t *testing.T) {
		c.call(2, "codex", msg{"prompt": "PATCH=sub/new.txt", "cwd": work})
		evs, res := c.response(2)
		if got := findEvent(evs, "patch_apply_begin")["auto_approved"]; got != true {
			t.Errorf("auto_approved = %v", got)
		}
		b, err := os.ReadFile(filepath.Join(work, "sub", "new.txt"))
		if err != nil || string(b) != patchContent {
			t.Errorf("file = %q, %v", b, err)
		}
		if !strings.Contains(resultText(res), "Success. Updated the following files:\nA sub/new.txt") {
			t.Errorf("text = %q", resultText(res))
		}
	})
	t.Run("outside: patch approval", func(t *testing.T) {
		c.call(3, "codex", msg{"prompt": "PATCH=" + outside, "cwd": work, "sandbox": "read-only"})
		evs := c.until(5*time.Second, func(m msg) bool { return m["method"] == "elicitation/create" })
		params := evs[len(evs)-1]["params"].(msg)
		wantChanges := msg{outside: msg{"type": "add", "content": patchContent}}
		if params["codex_elicitation"] != "patch-approval" || params["message"] != "Allow Codex to apply proposed code changes?" {
			t.Errorf("params = %v", params)
		}
		if diff := cmp.Diff(wantChanges, params["codex_changes"]); diff != "" {
			t.Errorf("codex_changes (-want +got):\n%s", diff)
		}
		if findEvent(evs, "apply_patch_approval_request") == nil {
			t.Errorf("no apply_patch_approval_request event")
		}
		c.send(msg{"jsonrpc": "2.0", "id": evs[len(evs)-1]["id"], "result": msg{"decision": "approved"}})
		evs, res := c.response(3)
		if b, err := os.ReadFile(outside); err != nil || string(b) != patchContent {
			t.Errorf("file = %q, %v", b, err)
		}
		if findEvent(evs, "turn_diff") == nil || !strings.HasPrefix(resultText(res), "MOCK_DONE: tool output was: Wall time: ") {
			t.Errorf("no turn_diff or text %q", resultText(res))
		}
	})
}

func TestMCPCancel(t *testing.T) {
	for _, mode := range []string{"", "1"} {
		t.Run("stale="+mode, func(t *testing.T) {
			c := start(t, testEnv(t, "MOCKCODEX_STALE_LISTENER", mode), "mcp-server")
			c.initialize()
			c.call(2, "codex", msg{"prompt": "SLOW=20 take your time", "cwd": t.TempDir()})
			evs := c.until(5*time.Second, func(m msg) bool { return evType(m) == "user_message" })
			thread := evs[0]["params"].(msg)["_meta"].(msg)["threadId"].(string)
			c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"probe cancels"}}`)
			evs = c.until(2*time.Second, func(m msg) bool { return evType(m) == "turn_aborted" })
			if diff := cmp.Diff([]string{"token_count", "raw_response_item", "turn_aborted"}, types(evs)); diff != "" {
				t.Errorf("events after cancel (-want +got):\n%s", diff)
			}
			c.quiet(200 * time.Millisecond)
			c.call(3, "codex-reply", msg{"threadId": thread, "prompt": "after cancel"})
			wantID := 3.0
			if mode == "1" {
				wantID = 2.0 // the stale listener of the cancelled request wins
			}
			_, res := c.response(wantID)
			if got := resultText(res); got != "MOCK_REPLY: after cancel" {
				t.Errorf("reply = %q", got)
			}
			c.quiet(200 * time.Millisecond)
		})
	}
	t.Run("during elicitation", func(t *testing.T) {
		c := start(t, testEnv(t), "mcp-server")
		c.initialize()
		c.call(2, "codex", msg{"prompt": "RUN_SHELL ESCALATE", "cwd": t.TempDir()})
		c.until(5*time.Second, func(m msg) bool { return m["method"] == "elicitation/create" })
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
		evs := c.until(2*time.Second, func(m msg) bool { return evType(m) == "turn_aborted" })
		if diff := cmp.Diff([]string{"raw_response_item", "token_count", "raw_response_item", "turn_aborted"}, types(evs)); diff != "" {
			t.Errorf("events after cancel (-want +got):\n%s", diff)
		}
		c.send(`{"jsonrpc":"2.0","id":0,"result":{"decision":"approved"}}`)
		c.quiet(200 * time.Millisecond)
		if !strings.Contains(c.stderr.String(), "No pending approval found for call_id") {
			t.Errorf("no warning for the late answer")
		}
	})
}
