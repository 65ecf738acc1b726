package codexchild

import (
	"encoding/json"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestParseResult: a codex tools/call result as Codex 0.153.4 writes it
// (structuredContent with threadId and content), as older versions did (text
// content only), failures, and results that are not results.
func TestParseResult(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    backend.Result
		wantErr bool
	}{
		{"structured", `{"structuredContent": {"threadId": "T2", "content": "done \"ok\""}, "content": [{"type": "text", "text": "ignored"}]}`,
			backend.Result{ThreadID: "T2", Text: `done "ok"`, Status: "completed"}, false},
		{"text content only", `{"content": [{"type": "text", "text": "one"}, {"type": "image", "data": "x"}, {"type": "text", "text": "two"}]}`,
			backend.Result{ThreadID: "T", Text: "one\ntwo", Status: "completed"}, false},
		{"tool failure", `{"content": [{"type": "text", "text": "Session not found"}], "isError": true}`,
			backend.Result{ThreadID: "T", Text: "Session not found", IsError: true, Status: "failed"}, false},
		{"structured without thread", `{"structuredContent": {"content": "x"}, "isError": false}`,
			backend.Result{ThreadID: "T", Text: "x", Status: "completed"}, false},
		{"structured null", `{"structuredContent": null, "content": [{"type": "text", "text": "t"}]}`,
			backend.Result{ThreadID: "T", Text: "t", Status: "completed"}, false},
		{"null", `null`, backend.Result{ThreadID: "T", Status: "completed"}, false},
		{"content not a list", `{"content": "x"}`, backend.Result{}, true},
		{"not an object", `[1]`, backend.Result{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseResult(json.RawMessage(tt.raw), "T", "U")
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseResult(%s) = %+v, want an error", tt.raw, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.TurnID = "U"
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreFields(backend.Result{}, "Raw")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestToolCallParams: a reply's hand-written params are the JSON
// encoding/json writes for the same map (prompts with quotes, newlines,
// markup and non-ASCII text), and a new thread gets the codex tool with only
// the parameters that are set.
func TestToolCallParams(t *testing.T) {
	for _, prompt := range []string{"", "go on", "say \"hi\"\\n", "<session-context>\n  identity: arch\n</session-context>\n\nnext", "héllo ✓\ttab"} {
		name, params := toolCallParams(backend.TurnRequest{ThreadID: "019a-thread", Prompt: prompt})
		if name != "codex-reply" {
			t.Errorf("name = %q, want codex-reply", name)
		}
		want := map[string]any{"name": "codex-reply", "arguments": map[string]any{"threadId": "019a-thread", "prompt": prompt}}
		raw, ok := params.(json.RawMessage)
		if !ok {
			t.Fatalf("reply params are %T, want json.RawMessage", params)
		}
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("prompt %q: params %s: %v", prompt, raw, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("prompt %q: params (-want +got):\n%s", prompt, diff)
		}
	}

	name, params := toolCallParams(backend.TurnRequest{Prompt: "start", Params: backend.ThreadParams{Cwd: "/w", Options: Options{Sandbox: "read-only", Config: map[string]any{"k": 1}}}})
	want := map[string]any{"name": "codex", "arguments": map[string]any{"prompt": "start", "cwd": "/w", "sandbox": "read-only", "config": map[string]any{"k": 1}}}
	if name != "codex" {
		t.Errorf("name = %q, want codex", name)
	}
	if diff := cmp.Diff(want, params); diff != "" {
		t.Errorf("new thread params (-want +got):\n%s", diff)
	}
}
