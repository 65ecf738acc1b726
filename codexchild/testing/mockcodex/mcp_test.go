package mockcodex

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMCPHandshake(t *testing.T) {
	c := start(t, testEnv(t), "mcp-server")
	var tools any
	if err := json.Unmarshal([]byte(mcpToolsJSON), &tools); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  string
		want msg
	}{
		{"tools/list before initialize", `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{}}`,
			msg{"jsonrpc": "2.0", "id": 0.0, "result": tools}},
		{"initialize echoes protocolVersion", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"probe","version":"0.0.1"}}}`,
			msg{"jsonrpc": "2.0", "id": 1.0, "result": msg{"protocolVersion": "1999-01-01", "capabilities": msg{"tools": msg{"listChanged": true}},
				"serverInfo": msg{"name": "codex-mcp-server", "title": "Codex", "version": "0.153.4", "user_agent": userAgent("codex_cli_rs", "0.153.4", "probe", "0.0.1")}}}},
		{"second initialize", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`,
			msg{"jsonrpc": "2.0", "id": 2.0, "error": msg{"code": -32600.0, "message": "initialize called more than once"}}},
		{"ping", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, msg{"jsonrpc": "2.0", "id": 3.0, "result": msg{}}},
		{"unknown method", `{"jsonrpc":"2.0","id":"x","method":"no/such/method","params":{}}`,
			msg{"jsonrpc": "2.0", "id": "x", "error": msg{"code": -32601.0, "message": "method not found: no/such/method", "data": msg{"method": "no/such/method"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.send(tt.req)
			if diff := cmp.Diff(tt.want, c.next(5*time.Second)); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("resources/list and prompts/list are never answered", func(t *testing.T) {
		c.send(`{"jsonrpc":"2.0","id":10,"method":"resources/list","params":{}}`)
		c.send(`{"jsonrpc":"2.0","id":11,"method":"prompts/list","params":{}}`)
		c.send(`Content-Length: 52`)
		c.send(`[{"jsonrpc":"2.0","id":13,"method":"ping"}]`)
		c.send(`{"jsonrpc":"2.0","id":12,"method":"ping"}`)
		if got := c.next(5 * time.Second); got["id"] != 12.0 {
			t.Errorf("first answer = %v, want the ping 12", got)
		}
		c.quiet(100 * time.Millisecond)
		if !strings.Contains(c.stderr.String(), "Failed to deserialize JSON-RPC message") {
			t.Errorf("stderr lacks the parse errors:\n%s", c.stderr.String())
		}
	})
}

func TestMCPToolErrors(t *testing.T) {
	c := start(t, testEnv(t), "mcp-server")
	c.initialize()
	zero := "00000000-0000-0000-0000-000000000000"
	tests := []struct {
		name string
		tool string
		args msg
		want msg
	}{
		{"unknown argument", "codex", msg{"prompt": "x", "agent_id": "a"}, msg{"isError": true, "content": []any{msg{"type": "text",
			"text": "Failed to parse configuration for Codex tool: unknown field `agent_id`, expected one of `prompt`, `model`, `cwd`, `approval-policy`, `sandbox`, `config`, `base-instructions`, `developer-instructions`, `compact-prompt`"}}}},
		{"missing prompt", "codex", msg{}, msg{"isError": true, "content": []any{msg{"type": "text", "text": "Failed to parse configuration for Codex tool: missing field `prompt`"}}}},
		{"untrusted policy", "codex", msg{"prompt": "x", "approval-policy": "untrusted"}, msg{"isError": true, "content": []any{msg{"type": "text",
			"text": "Failed to parse configuration for Codex tool: unknown variant `untrusted`, expected `on-request` or `never`"}}}},
		{"unknown tool", "nope", msg{"prompt": "x"}, msg{"isError": true, "content": []any{msg{"type": "text", "text": "Unknown tool 'nope'"}}}},
		{"unknown thread", "codex-reply", msg{"threadId": zero, "prompt": "x"}, msg{"isError": true,
			"content":           []any{msg{"type": "text", "text": "Session not found for thread_id: " + zero}},
			"structuredContent": msg{"threadId": zero, "content": "Session not found for thread_id: " + zero}}},
		{"non-UUID thread", "codex-reply", msg{"threadId": "not-a-uuid", "prompt": "x"}, msg{"isError": true, "content": []any{msg{"type": "text",
			"text": "Failed to parse thread_id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `n` at 1"}}}},
		{"no thread", "codex-reply", msg{"prompt": "x"}, msg{"isError": true, "content": []any{msg{"type": "text",
			"text": "Failed to parse thread_id: either threadId or conversationId must be provided"}}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.call(100+i, tt.tool, tt.args)
			_, got := c.response(100 + i)
			if diff := cmp.Diff(tt.want, got["result"]); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The event types of mcp_codex_and_reply.jsonl (0.153.4), first and second
// turn.
var (
	recordedFirstTurn = []string{"session_configured", "mcp_startup_complete", "warning", "task_started",
		"raw_response_item", "raw_response_item", "raw_response_item", "item_started", "item_completed", "user_message",
		"item_started", "agent_message_content_delta", "agent_message_content_delta", "item_completed", "agent_message",
		"raw_response_item", "raw_response_completed", "token_count", "task_complete"}
	recordedSecondTurn = []string{"warning", "task_started", "raw_response_item", "item_started", "item_completed", "user_message",
		"item_started", "agent_message_content_delta", "agent_message_content_delta", "item_completed", "agent_message",
		"raw_response_item", "raw_response_completed", "token_count", "task_complete"}
)

func TestMCPTurn(t *testing.T) {
	env := testEnv(t)
	c := start(t, env, "mcp-server")
	c.initialize()
	work := t.TempDir()
	c.call(2, "codex", msg{"prompt": "  hello from probe ", "cwd": work})
	evs, res := c.response(2)
	if diff := cmp.Diff(recordedFirstTurn, types(evs)); diff != "" {
		t.Errorf("first turn events (-recorded +got):\n%s", diff)
	}
	thread := threadOf(res)
	wantRes := msg{"structuredContent": msg{"threadId": thread, "content": "MOCK_REPLY: hello from probe"},
		"content": []any{msg{"type": "text", "text": "MOCK_REPLY: hello from probe"}}}
	if diff := cmp.Diff(wantRes, res["result"]); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	for _, e := range evs {
		meta := e["params"].(msg)["_meta"].(msg)
		if diff := cmp.Diff(msg{"requestId": 2.0, "threadId": thread}, meta); diff != "" {
			t.Fatalf("_meta (-want +got):\n%s", diff)
		}
	}
	if got := findEvent(evs, "session_configured")["cwd"]; got != work {
		t.Errorf("session_configured cwd = %v, want %s", got, work)
	}
	var deltas string
	for _, e := range evs {
		if evType(e) == "agent_message_content_delta" {
			deltas += evMsg(e)["delta"].(string)
		}
	}
	if deltas != "MOCK_REPLY: hello from probe" {
		t.Errorf("deltas join to %q", deltas)
	}

	// codex-reply with a string id and the deprecated conversationId.
	c.call("req-abc", "codex-reply", msg{"conversationId": thread, "prompt": "second EVENTS=3"})
	evs, res = c.response("req-abc")
	want := append([]string(nil), recordedSecondTurn...)
	want = append(want[:9], append([]string{"agent_message_content_delta", "agent_message_content_delta", "agent_message_content_delta"}, want[9:]...)...)
	if diff := cmp.Diff(want, types(evs)); diff != "" {
		t.Errorf("second turn events (-want +got):\n%s", diff)
	}
	if got := evs[0]["params"].(msg)["_meta"].(msg)["requestId"]; got != "req-abc" {
		t.Errorf("requestId = %v, want the string id", got)
	}
	if got := resultText(res); got != "MOCK_REPLY: second EVENTS=3" {
		t.Errorf("reply = %q", got)
	}

	// The rollout is written in the 0.153.4 format.
	matches, _ := filepath.Glob(filepath.Join(env["CODEX_HOME"], "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("rollouts for %s: %v", thread, matches)
	}
	b, _ := os.ReadFile(matches[0])
	var first struct {
		Type    string `json:"type"`
		Payload struct {
			ID, Source, Originator, CliVersion string
			Cwd                                string `json:"cwd"`
		} `json:"payload"`
	}
	_ = json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &first)
	if first.Type != "session_meta" || first.Payload.ID != thread || first.Payload.Source != "mcp" || first.Payload.Cwd != work {
		t.Errorf("rollout first line = %+v", first)
	}

	// A new process does not know the thread.
	c2 := start(t, env, "mcp-server")
	c2.initialize()
	c2.call(2, "codex-reply", msg{"threadId": thread, "prompt": "x"})
	_, res = c2.response(2)
	if got := resultText(res); got != "Session not found for thread_id: "+thread {
		t.Errorf("reply in a new process = %q", got)
	}
}

func TestMCPModelErrors(t *testing.T) {
	c := start(t, testEnv(t), "mcp-server")
	c.initialize()
	for i, tt := range []struct{ prompt, text, info string }{
		{"FAIL500 now", text500, "internal_server_error"},
		{"FAILSSE now", textFailSSE, "other"},
	} {
		c.call(i+2, "codex", msg{"prompt": tt.prompt, "cwd": t.TempDir()})
		evs, res := c.response(i + 2)
		if diff := cmp.Diff(msg{"type": "error", "message": tt.text, "codex_error_info": tt.info}, findEvent(evs, "error")); diff != "" {
			t.Errorf("%s: error event (-want +got):\n%s", tt.prompt, diff)
		}
		want := msg{"isError": true, "content": []any{msg{"type": "text", "text": tt.text}},
			"structuredContent": msg{"threadId": threadOf(res), "content": tt.text}}
		if diff := cmp.Diff(want, res["result"]); diff != "" {
			t.Errorf("%s: result (-want +got):\n%s", tt.prompt, diff)
		}
	}
}

func TestMCPParallelThreads(t *testing.T) {
	c := start(t, testEnv(t), "mcp-server")
	c.initialize()
	begin := time.Now()
	c.call(2, "codex", msg{"prompt": "SLOW=2 a", "cwd": t.TempDir()})
	c.call(3, "codex", msg{"prompt": "SLOW=2 b", "cwd": t.TempDir()})
	got := map[any]string{}
	for len(got) < 2 {
		m := c.next(5 * time.Second)
		if _, ok := m["result"]; ok {
			got[m["id"]] = resultText(m)
		}
	}
	if d := time.Since(begin); d > 3500*time.Millisecond {
		t.Errorf("two SLOW=2 turns on two threads took %v; not concurrent", d)
	}
	if diff := cmp.Diff(map[any]string{2.0: "MOCK_REPLY: SLOW=2 a", 3.0: "MOCK_REPLY: SLOW=2 b"}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}
