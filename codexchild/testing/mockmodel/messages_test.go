package mockmodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// userText is a Messages API user message of text blocks.
func userText(texts ...string) map[string]any {
	var blocks []any
	for _, t := range texts {
		blocks = append(blocks, map[string]any{"type": "text", "text": t})
	}
	return map[string]any{"role": "user", "content": blocks}
}

// claudeTools are tools as Claude Code offers them: its own and an MCP
// server's.
var claudeTools = []any{
	map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}},
	map[string]any{"name": "mcp__atm__atm_send", "input_schema": map[string]any{"type": "object"}},
}

// postMessages posts a Messages request and returns the answer's content
// blocks and stop_reason, read whole or from the stream.
func postMessages(t *testing.T, url string, body map[string]any) ([]map[string]any, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(url+"/messages", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, raw)
	}
	if stream, _ := body["stream"].(bool); !stream {
		var msg struct {
			Content    []map[string]any `json:"content"`
			StopReason string           `json:"stop_reason"`
		}
		if err := json.NewDecoder(res.Body).Decode(&msg); err != nil {
			t.Fatal(err)
		}
		return msg.Content, msg.StopReason
	}
	// Rebuild the message from the events, as a client does.
	var content []map[string]any
	var stop string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string         `json:"type"`
			Index        int            `json:"index"`
			ContentBlock map[string]any `json:"content_block"`
			Delta        map[string]any `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		switch ev.Type {
		case "content_block_start":
			content = append(content, ev.ContentBlock)
		case "content_block_delta":
			c := content[ev.Index]
			switch ev.Delta["type"] {
			case "text_delta":
				c["text"] = c["text"].(string) + ev.Delta["text"].(string)
			case "input_json_delta":
				var in any
				if err := json.Unmarshal([]byte(ev.Delta["partial_json"].(string)), &in); err != nil {
					t.Fatal(err)
				}
				c["input"] = in
			}
		case "message_delta":
			stop, _ = ev.Delta["stop_reason"].(string)
		}
	}
	return content, stop
}

func TestMessages(t *testing.T) {
	s := start(t, Config{})
	toolUse := map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "ls"}}}}
	toolResult := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "a.go b.go"}}},
		map[string]any{"type": "text", "text": "<system-reminder>\nnot the user's\n</system-reminder>"}}}
	tests := []struct {
		name     string
		messages []any
		want     []map[string]any
		wantStop string
	}{
		{"reply, without Claude Code's reminders", []any{userText("<system-reminder>\ncontext\n</system-reminder>", "  hello mock  ")},
			[]map[string]any{{"type": "text", "text": "MOCK_REPLY: hello mock"}}, "end_turn"},
		{"reply, without the blocks serve puts in front", []any{userText("<session-context>\nIdentity: rev-1\n</session-context>\n\n<team-communication x=\"1\">\nmail\n</team-communication>\n\nreview main.go")},
			[]map[string]any{{"type": "text", "text": "MOCK_REPLY: review main.go"}}, "end_turn"},
		{"only a block", []any{userText("<note>just this</note>")},
			[]map[string]any{{"type": "text", "text": "MOCK_REPLY: <note>just this</note>"}}, "end_turn"},
		{"a string content", []any{map[string]any{"role": "user", "content": "plain"}},
			[]map[string]any{{"type": "text", "text": "MOCK_REPLY: plain"}}, "end_turn"},
		{"the shell", []any{userText("RUN_SHELL CMD=echo hi")},
			[]map[string]any{{"type": "tool_use", "id": "toolu_N_0", "name": "Bash", "input": map[string]any{"command": "echo hi", "description": "Run the mock's command"}}}, "tool_use"},
		{"the default shell command", []any{userText("RUN_SHELL")},
			[]map[string]any{{"type": "tool_use", "id": "toolu_N_0", "name": "Bash", "input": map[string]any{"command": "touch mock_shell_probe.txt", "description": "Run the mock's command"}}}, "tool_use"},
		{"an MCP tool by its own name", []any{userText(`CALL_TOOL=atm_send ARGS={"to":"team-lead","message":"hi"}`)},
			[]map[string]any{{"type": "tool_use", "id": "toolu_N_0", "name": "mcp__atm__atm_send", "input": map[string]any{"to": "team-lead", "message": "hi"}}}, "tool_use"},
		{"an MCP tool as server.tool", []any{userText(`CALL_TOOL=atm.atm_send`)},
			[]map[string]any{{"type": "tool_use", "id": "toolu_N_0", "name": "mcp__atm__atm_send", "input": map[string]any{}}}, "tool_use"},
		{"a tool not offered", []any{userText(`CALL_TOOL=nope ARGS=not json`)},
			[]map[string]any{{"type": "tool_use", "id": "toolu_N_0", "name": "nope", "input": map[string]any{}}}, "tool_use"},
		{"after a tool result", []any{userText("RUN_SHELL CMD=ls"), toolUse, toolResult},
			[]map[string]any{{"type": "text", "text": "MOCK_DONE: tool output was: a.go b.go"}}, "end_turn"},
	}
	for _, stream := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			if stream {
				name += "/streamed"
			}
			t.Run(name, func(t *testing.T) {
				n := len(s.Requests()) + 1
				got, stop := postMessages(t, s.URL(), map[string]any{"model": "claude-mock", "stream": stream, "max_tokens": 100,
					"system": []any{map[string]any{"type": "text", "text": "You are Claude Code."}}, "tools": claudeTools, "messages": tt.messages})
				want := make([]map[string]any, len(tt.want))
				for i, b := range tt.want {
					want[i] = map[string]any{}
					for k, v := range b {
						if k == "id" {
							v = strings.Replace(v.(string), "N", itoa(n), 1)
						}
						want[i][k] = v
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("content (-want +got):\n%s", diff)
				}
				if stop != tt.wantStop {
					t.Errorf("stop_reason = %q, want %q", stop, tt.wantStop)
				}
			})
		}
	}
	reqs := s.Requests()
	last := reqs[len(reqs)-1]
	if out, ok := last.ToolOutput(); !ok || out != "a.go b.go" || last.LastItemType != "tool_result" || last.LastUserText != "RUN_SHELL CMD=ls" {
		t.Errorf("the last request: ToolOutput %q, %v; LastItemType %q; LastUserText %q", out, ok, last.LastItemType, last.LastUserText)
	}
	if diff := cmp.Diff([]string{"Bash", "mcp__atm__atm_send"}, last.ToolNames); diff != "" {
		t.Errorf("ToolNames (-want +got):\n%s", diff)
	}
	for _, want := range []string{"You are Claude Code.", `{"command":"ls"}`, "a.go b.go"} {
		if !s.SawInput(want) {
			t.Errorf("SawInput(%q) = false", want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestMessagesSlow: SLOW=1 waits a second, sending ping events, before
// the answer; a client that goes away ends the wait.
func TestMessagesSlow(t *testing.T) {
	s := start(t, Config{KeepAlive: 100 * time.Millisecond})
	body := `{"stream":true,"messages":[{"role":"user","content":"SLOW=1 then reply"}]}`
	began := time.Now()
	res, err := http.Post(s.URL()+"/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if took := time.Since(began); took < time.Second {
		t.Errorf("SLOW=1 answered after %s", took)
	}
	for _, want := range []string{"event: message_start", "event: ping", `"text":"MOCK_REPLY: SLOW=1 then reply"`, "event: message_stop"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the stream has no %s:\n%s", want, raw)
		}
	}
}

// TestMessagesNotMessages: a POST to /v1/messages whose body is not a
// Messages request, and count_tokens, get 404.
func TestMessagesNotMessages(t *testing.T) {
	s := start(t, Config{})
	for _, path := range []string{"/messages", "/messages/count_tokens"} {
		res, err := http.Post(s.URL()+path, "application/json", strings.NewReader(`{"input":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: status %d, want 404", path, res.StatusCode)
		}
	}
}
