package mcpconn

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// TestParseToolCall: the name, the arguments (split, not decoded) and the
// progress token of a tools/call, and the requests that are not one.
func TestParseToolCall(t *testing.T) {
	tests := []struct {
		name      string
		params    string
		wantTool  string
		wantArgs  map[string]string // argument → its string value
		wantToken string            // "" for none
		wantErr   bool
	}{
		{name: "reply", params: `{"name":"codex-reply","arguments":{"agent_id":"arch-1","prompt":"go on"}}`,
			wantTool: "codex-reply", wantArgs: map[string]string{"agent_id": "arch-1", "prompt": "go on"}},
		{name: "escapes in strings and names", params: `{"na\u006de":"codex","arguments":{"pro\u006dpt":"say \"hi\"\n<b>"}}`,
			wantTool: "codex", wantArgs: map[string]string{"prompt": "say \"hi\"\n<b>"}},
		{name: "repeated argument keeps the last", params: `{"name":"codex","arguments":{"prompt":"a","prompt":"b"}}`,
			wantTool: "codex", wantArgs: map[string]string{"prompt": "b"}},
		{name: "no arguments", params: `{"name":"agent_sessions"}`, wantTool: "agent_sessions", wantArgs: map[string]string{}},
		{name: "null arguments", params: `{"name":"agent_sessions","arguments":null}`, wantTool: "agent_sessions", wantArgs: map[string]string{}},
		{name: "numeric progress token", params: `{"name":"codex","arguments":{},"_meta":{"progressToken":7}}`,
			wantTool: "codex", wantArgs: map[string]string{}, wantToken: "7"},
		{name: "string progress token", params: `{"_meta":{"progressToken":"p-1"},"name":"codex","arguments":{}}`,
			wantTool: "codex", wantArgs: map[string]string{}, wantToken: `"p-1"`},
		{name: "null progress token", params: `{"name":"codex","arguments":{},"_meta":{"progressToken":null}}`,
			wantTool: "codex", wantArgs: map[string]string{}},
		{name: "_meta not an object", params: `{"name":"codex","arguments":{},"_meta":5}`, wantTool: "codex", wantArgs: map[string]string{}},
		{name: "no name", params: `{"arguments":{}}`, wantErr: true},
		{name: "name not a string", params: `{"name":5,"arguments":{}}`, wantErr: true},
		{name: "Name is not name", params: `{"Name":"codex","arguments":{}}`, wantErr: true},
		{name: "arguments not an object", params: `{"name":"codex","arguments":["prompt"]}`, wantErr: true},
		{name: "params not an object", params: `["codex"]`, wantErr: true},
	}
	s := New(Config{Handler: nil})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := jsonrpcframe.Parse([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":` + tt.params + `}`))
			if err != nil {
				t.Fatal(err)
			}
			c, err := parseCall(s, m)
			if tt.wantErr {
				if !errors.Is(err, proxyerr.ErrInvalidParams) {
					t.Fatalf("err = %v, want -32602", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != tt.wantTool || string(c.RawID) != "3" {
				t.Errorf("tool %q id %s, want %q id 3", c.Name, c.RawID, tt.wantTool)
			}
			got := map[string]string{}
			for k := range c.Args {
				if got[k], err = c.Args.Str(k); err != nil {
					t.Fatalf("argument %s: %v", k, err)
				}
			}
			if diff := cmp.Diff(tt.wantArgs, got); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
			var token string
			if c.Progress != nil {
				token = string(c.Progress.token)
			}
			if token != tt.wantToken {
				t.Errorf("progress token %q, want %q", token, tt.wantToken)
			}
		})
	}
}

// TestResultJSON: a tool result is written as encoding/json writes the map
// {content, isError, structuredContent} (without HTML escapes), whether the
// structured part is written by hand (flat) or not (nested, lists, floats).
func TestResultJSON(t *testing.T) {
	tests := []struct {
		name string
		r    ToolResult
	}{
		{"turn result", ToolResult{Text: "mock reply: <session-context>\n\t\"quoted\" & done ✓", Structured: map[string]any{
			"agent_id": "arch-1", "threadId": "019a", "identity": "arch", "content": "x\\y", "status": "completed"}}},
		{"failed turn", ToolResult{Text: "codex failed", IsError: true, Structured: map[string]any{"status": "failed", "agent_id": ""}}},
		{"scalars", ToolResult{Text: "3 unread", Structured: map[string]any{"identity": "arch", "count": 3, "big": int64(1) << 40, "ok": true, "none": nil}}},
		{"no structured content", ToolResult{Text: "plain"}},
		{"nested", ToolResult{Text: "sessions", Structured: map[string]any{"sessions": []any{map[string]any{"agent_id": "a<b"}}}}},
		{"float", ToolResult{Text: "t", Structured: map[string]any{"timeout_secs": 1.5}}},
		{"struct", ToolResult{Text: "t", Structured: struct {
			A string `json:"a"`
		}{"<x>"}}},
		{"invalid utf-8", ToolResult{Text: "bad \xff", Structured: map[string]any{"k\xfe": "v\xff"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[string]any{"content": []any{map[string]any{"type": "text", "text": tt.r.Text}}}
			if tt.r.Structured != nil {
				want["structuredContent"] = tt.r.Structured
			}
			if tt.r.IsError {
				want["isError"] = true
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(want); err != nil {
				t.Fatal(err)
			}
			got := tt.r.JSON()
			if w := bytes.TrimRight(buf.Bytes(), "\n"); !bytes.Equal(got, w) {
				t.Errorf("got  %s\nwant %s", got, w)
			}
		})
	}
}
