package mockmodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// start starts a mock and closes it in cleanup, failing the test if a
// handler goroutine outlives Close.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		checkNoGoroutines(t, "mockmodel.(*Server)", "mockmodel.(*Stream)")
	})
	return s
}

// checkNoGoroutines fails the test if a goroutine runs a function whose name
// contains one of the markers, after a grace of two seconds.
func checkNoGoroutines(t *testing.T, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for _, g := range strings.Split(stacks, "\n\n") {
			for _, m := range markers {
				if strings.Contains(g, m) {
					leaked = append(leaked, g)
					break
				}
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("leaked goroutines:\n%s", strings.Join(leaked, "\n\n"))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// msg is an input message item.
func msg(role, text string) map[string]any {
	return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

var envContext = msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")

// body is a request body like the ones Codex sends, with exec_command offered.
func body(input ...map[string]any) map[string]any {
	in := []any{msg("developer", "<permissions instructions>dev text</permissions instructions>"), envContext}
	for _, i := range input {
		in = append(in, i)
	}
	return map[string]any{
		"model":        "mock-model",
		"instructions": "You are a coding agent.",
		"input":        in,
		"tools":        []any{map[string]any{"type": "function", "name": "exec_command"}, map[string]any{"type": "web_search"}},
		"stream":       true,
		"store":        false,
	}
}

type sseEvent struct {
	Type string
	Data map[string]any
}

// outcome summarizes one answer.
type outcome struct {
	Status     int
	Types      []string       // event types in order
	KeepAlives int            // SSE comments
	Text       string         // text of the last output_item.done message
	Call       map[string]any // the last output_item.done function_call: name, namespace, arguments
	Args       map[string]any // its arguments parsed
	Error      string         // HTTP error message or response.failed message
}

func post(t *testing.T, url string, b any) outcome {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url+"/responses", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-mock")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	o := outcome{Status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Message string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("decode error body: %v", err)
		}
		o.Error = e.Error.Message
		return o
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	events, keepAlives := readSSE(t, resp.Body)
	o.KeepAlives = keepAlives
	for _, ev := range events {
		o.Types = append(o.Types, ev.Type)
		switch ev.Type {
		case "response.output_item.done":
			item, _ := ev.Data["item"].(map[string]any)
			switch item["type"] {
			case "message":
				o.Text = contentText(item["content"])
			case "function_call":
				o.Call = map[string]any{"name": item["name"]}
				if ns, ok := item["namespace"]; ok {
					o.Call["namespace"] = ns
				}
				args, _ := item["arguments"].(string)
				if err := json.Unmarshal([]byte(args), &o.Args); err != nil {
					t.Errorf("function call arguments %q: %v", args, err)
				}
			}
		case "response.failed":
			resp, _ := ev.Data["response"].(map[string]any)
			e, _ := resp["error"].(map[string]any)
			o.Error, _ = e["message"].(string)
		}
	}
	return o
}

// readSSE parses a server-sent-event stream, checking that every event's
// name equals its data's type.
func readSSE(t *testing.T, r io.Reader) ([]sseEvent, int) {
	t.Helper()
	var events []sseEvent
	keepAlives := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ": "):
			keepAlives++
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("bad data line %q: %v", line, err)
			}
			if data["type"] != name {
				t.Errorf("event %q has data type %v", name, data["type"])
			}
			events = append(events, sseEvent{Type: name, Data: data})
		case line == "":
		default:
			t.Errorf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read stream: %v", err)
	}
	return events, keepAlives
}

var (
	messageTypes = []string{"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.delta", "response.output_text.done", "response.output_item.done"}
	callTypes = []string{"response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done"}
)

func seq(parts ...any) []string {
	var s []string
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			s = append(s, p)
		case []string:
			s = append(s, p...)
		}
	}
	return s
}

func TestBehaviour(t *testing.T) {
	const created, completed = "response.created", "response.completed"
	toolCall := map[string]any{"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": `{"cmd":"x"}`}
	tests := []struct {
		name string
		body map[string]any
		want outcome
	}{
		{
			name: "plain reply",
			body: body(msg("user", "  hello there \n")),
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed), Text: "MOCK_REPLY: hello there"},
		},
		{
			name: "injected context after the prompt is skipped",
			body: body(msg("user", "the prompt"), msg("user", "# AGENTS.md instructions for /w")),
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed), Text: "MOCK_REPLY: the prompt"},
		},
		{
			name: "tool output string",
			body: body(msg("user", "RUN_SHELL"), toolCall,
				map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "Process exited with code 0\nOutput:\nok"}),
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed),
				Text: "MOCK_DONE: tool output was: Process exited with code 0\nOutput:\nok"},
		},
		{
			name: "mcp tool output content list",
			body: body(msg("user", "CALL_TOOL=mcp__atm.echo ARGS={}"), toolCall,
				map[string]any{"type": "function_call_output", "call_id": "call_1", "output": []any{
					map[string]any{"type": "input_text", "text": "Wall time: 0.001 seconds\nOutput:"},
					map[string]any{"type": "input_text", "text": "identity=alice"}}}),
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed),
				Text: "MOCK_DONE: tool output was: Wall time: 0.001 seconds\nOutput:\nidentity=alice"},
		},
		{
			name: "tool output truncated to 200 characters",
			body: body(msg("user", "RUN_SHELL"), toolCall,
				map[string]any{"type": "custom_tool_call_output", "call_id": "call_1", "output": strings.Repeat("é", 300)}),
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed),
				Text: "MOCK_DONE: tool output was: " + strings.Repeat("é", 200)},
		},
		{
			name: "run shell",
			body: body(msg("user", "please RUN_SHELL")),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed),
				Call: map[string]any{"name": "exec_command"}, Args: map[string]any{"cmd": "touch mock_shell_probe.txt"}},
		},
		{
			name: "run shell escalated with a command",
			body: body(msg("user", "RUN_SHELL ESCALATE\nCMD=echo a\\nb > out.txt \nmore")),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed),
				Call: map[string]any{"name": "exec_command"},
				Args: map[string]any{"cmd": "echo a\nb > out.txt", "sandbox_permissions": "require_escalated",
					"justification": "mock wants to run outside the sandbox"}},
		},
		{
			name: "run shell prefers shell_command",
			body: func() map[string]any {
				b := body(msg("user", "RUN_SHELL"))
				b["tools"] = []any{map[string]any{"type": "function", "name": "shell_command"}}
				return b
			}(),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed),
				Call: map[string]any{"name": "shell_command"}, Args: map[string]any{"command": "touch mock_shell_probe.txt"}},
		},
		{
			name: "run shell falls back to shell",
			body: func() map[string]any {
				b := body(msg("user", "RUN_SHELL"))
				delete(b, "tools")
				return b
			}(),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed),
				Call: map[string]any{"name": "shell"},
				Args: map[string]any{"command": []any{"bash", "-lc", "touch mock_shell_probe.txt"}}},
		},
		{
			name: "patch",
			body: body(msg("user", "PATCH=/home/x/new file.txt")),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed),
				Call: map[string]any{"name": "exec_command"},
				Args: map[string]any{"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: /home/x/new\n+hello from mockmodel\n*** End Patch\nEOF"}},
		},
		{
			name: "call namespaced tool",
			body: body(msg("user", "CALL_TOOL=mcp__atm.atm_send ARGS={\"to\": \"bob\", \"message\": \"hi there\"}\nignored")),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed),
				Call: map[string]any{"name": "atm_send", "namespace": "mcp__atm"},
				Args: map[string]any{"to": "bob", "message": "hi there"}},
		},
		{
			name: "call flat tool without args",
			body: body(msg("user", "CALL_TOOL=mcp__atm__atm_send")),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed),
				Call: map[string]any{"name": "mcp__atm__atm_send"}, Args: map[string]any{}},
		},
		{
			name: "answer with given text",
			body: body(msg("user", "give JSON ANSWER= {\"answer\": \"42\"} \nnot this")),
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed), Text: `{"answer": "42"}`},
		},
		{
			name: "recall earlier user texts, not injected context",
			body: body(msg("user", "<environment_context>x</environment_context>"), msg("user", "remember alpha"),
				msg("assistant", "MOCK_REPLY: remember alpha"), msg("user", "<turn_aborted>\nThe user interrupted\n</turn_aborted>"),
				msg("user", "and beta"), msg("user", "RECALL please")),
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed), Text: "MOCK_RECALL: remember alpha | and beta"},
		},
		{
			name: "spawn a slow sub-agent",
			body: func() map[string]any {
				b := body(msg("user", "please SPAWN_SUB=3"))
				b["tools"] = []any{map[string]any{"type": "namespace", "name": "multi_agent_v1", "tools": []any{
					map[string]any{"type": "function", "name": "spawn_agent"}}}}
				return b
			}(),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed),
				Call: map[string]any{"name": "spawn_agent", "namespace": "multi_agent_v1"}, Args: map[string]any{"message": "SLOW=3 sub-agent task"}},
		},
		{
			name: "fail500",
			body: body(msg("user", "FAIL500 now")),
			want: outcome{Status: 500, Error: "mock forced failure"},
		},
		{
			name: "failsse",
			body: body(msg("user", "FAILSSE now")),
			want: outcome{Status: 200, Types: seq(created, "response.failed"), Error: "mock response.failed"},
		},
		{
			name: "minimal",
			body: body(msg("user", "MINIMAL")),
			want: outcome{Status: 200, Types: seq("response.output_item.done", completed), Text: "MOCK_MINIMAL"},
		},
		{
			name: "nocomplete",
			body: body(msg("user", "NOCOMPLETE")),
			want: outcome{Status: 200, Types: seq("response.output_item.done"), Text: "MOCK_NOCOMPLETE"},
		},
		{
			name: "deltaonly",
			body: body(msg("user", "DELTAONLY")),
			want: outcome{Status: 200, Types: seq("response.output_text.delta", completed)},
		},
		{
			name: "fail keywords ignored after a tool output",
			body: body(msg("user", "FAIL500 RUN_SHELL"), toolCall,
				map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "x"}),
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed), Text: "MOCK_DONE: tool output was: x"},
		},
		{
			name: "slow then shell",
			body: body(msg("user", "SLOW=1 RUN_SHELL")),
			want: outcome{Status: 200, Types: seq(created, callTypes, completed), KeepAlives: 4,
				Call: map[string]any{"name": "exec_command"}, Args: map[string]any{"cmd": "touch mock_shell_probe.txt"}},
		},
		{
			name: "empty input",
			body: map[string]any{"input": []any{}},
			want: outcome{Status: 200, Types: seq(created, messageTypes, completed), Text: "MOCK_REPLY: "},
		},
	}
	s := start(t, Config{KeepAlive: 200 * time.Millisecond})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := post(t, s.URL(), tt.body)
			if tt.want.KeepAlives > 0 && got.KeepAlives >= tt.want.KeepAlives-1 {
				got.KeepAlives = tt.want.KeepAlives // timer jitter: one fewer is fine
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answer mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScriptAndHandler(t *testing.T) {
	s := start(t, Config{
		Script: map[string]Responder{
			"PING":      Reply("pong"),
			"PING_LONG": Reply("the longest keyword wins"),
			"SAY_HI":    Call(FunctionCall{Namespace: "mcp__x", Name: "hi", Arguments: `{"a":1}`, CallID: "c9"}),
		},
		Handler: func(r *Request) Responder {
			if strings.Contains(r.LastUserText, "HANDLED") {
				return Fail("handled")
			}
			if strings.Contains(r.LastUserText, "DELEGATE") {
				return Default
			}
			return nil
		},
	})
	tests := []struct {
		prompt string
		want   outcome
	}{
		{"PING", outcome{Status: 200, Types: seq("response.created", messageTypes, "response.completed"), Text: "pong"}},
		{"PING_LONG", outcome{Status: 200, Types: seq("response.created", messageTypes, "response.completed"), Text: "the longest keyword wins"}},
		{"SAY_HI", outcome{Status: 200, Types: seq("response.created", callTypes, "response.completed"),
			Call: map[string]any{"name": "hi", "namespace": "mcp__x"}, Args: map[string]any{"a": float64(1)}}},
		{"HANDLED PING", outcome{Status: 200, Types: seq("response.created", "response.failed"), Error: "handled"}},
		{"DELEGATE PING", outcome{Status: 200, Types: seq("response.created", messageTypes, "response.completed"), Text: "MOCK_REPLY: DELEGATE PING"}},
		{"nothing special", outcome{Status: 200, Types: seq("response.created", messageTypes, "response.completed"), Text: "MOCK_REPLY: nothing special"}},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			got := post(t, s.URL(), body(msg("user", tt.prompt)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answer mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// A script keyword does not fire again on the tool output that follows
	// its call: the default MOCK_DONE ends the turn.
	got := post(t, s.URL(), body(msg("user", "SAY_HI"),
		map[string]any{"type": "function_call_output", "call_id": "c9", "output": "hi back"}))
	if got.Text != "MOCK_DONE: tool output was: hi back" {
		t.Errorf("after a scripted call: text %q, want the MOCK_DONE reply", got.Text)
	}
}

func TestRecording(t *testing.T) {
	var log bytes.Buffer
	var logMu sync.Mutex
	s := start(t, Config{Log: lockedWriter{&logMu, &log}})
	b := body(msg("user", "first prompt"))
	b["tools"] = append(b["tools"].([]any), map[string]any{"type": "namespace", "name": "mcp__atm",
		"tools": []any{map[string]any{"type": "function", "name": "atm_send"}, map[string]any{"type": "function", "name": "atm_read"}}})
	post(t, s.URL(), b)
	post(t, s.URL(), body(msg("user", "RUN_SHELL"),
		map[string]any{"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": `{"cmd":"secret-cmd"}`},
		map[string]any{"type": "function_call_output", "call_id": "c", "output": "tool said boo"}))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reqs, err := s.WaitRequests(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		N                          int
		Method, Path, Auth         string
		LastUserText, LastItemType string
		ToolNames                  []string
	}
	var got []summary
	for _, r := range reqs {
		got = append(got, summary{r.N, r.Method, r.Path, r.Header.Get("Authorization"), r.LastUserText, r.LastItemType, r.ToolNames})
	}
	want := []summary{
		{1, "POST", "/v1/responses", "Bearer sk-mock", "first prompt", "message",
			[]string{"exec_command", "web_search", "mcp__atm.atm_send", "mcp__atm.atm_read"}},
		{2, "POST", "/v1/responses", "Bearer sk-mock", "RUN_SHELL", "function_call_output",
			[]string{"exec_command", "web_search"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded requests (-want +got):\n%s", diff)
	}
	if !reqs[0].HasTool("mcp__atm.atm_send") || reqs[1].HasTool("mcp__atm.atm_send") {
		t.Errorf("HasTool wrong: %v / %v", reqs[0].ToolNames, reqs[1].ToolNames)
	}
	if out, ok := reqs[1].ToolOutput(); !ok || out != "tool said boo" {
		t.Errorf("ToolOutput = %q, %v", out, ok)
	}

	for substr, want := range map[string]int{
		"You are a coding agent.": 2, // instructions
		"dev text":                2, // developer message
		"<cwd>/w</cwd>":           2, // injected user context
		"first prompt":            1,
		"secret-cmd":              1, // tool call arguments
		"tool said boo":           1, // tool output
		"never said":              0,
	} {
		if got := s.CountInput(substr); got != want {
			t.Errorf("CountInput(%q) = %d, want %d", substr, got, want)
		}
		if got := s.SawInput(substr); got != (want > 0) {
			t.Errorf("SawInput(%q) = %v", substr, got)
		}
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := s.WaitRequests(ctx2, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRequests for a request that never comes: %v, want DeadlineExceeded", err)
	}

	logMu.Lock()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	logMu.Unlock()
	if len(lines) != 2 {
		t.Fatalf("log has %d lines, want 2:\n%s", len(lines), log.String())
	}
	var entry struct {
		N       int
		Method  string
		Headers map[string]string
		HasAuth bool `json:"has_auth"`
		Body    map[string]any
	}
	if err := json.Unmarshal([]byte(lines[0]), &entry); err != nil {
		t.Fatal(err)
	}
	if entry.N != 1 || entry.Method != "POST" || !entry.HasAuth || entry.Body["model"] != "mock-model" {
		t.Errorf("log entry %+v", entry)
	}
	if _, ok := entry.Headers["authorization"]; ok || strings.Contains(lines[0], "sk-mock") {
		t.Errorf("log leaks the Authorization header: %s", lines[0])
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestModelsAndNotFound(t *testing.T) {
	s := start(t, Config{})
	tests := []struct {
		method, path string
		wantStatus   int
		wantBody     string
	}{
		{"GET", "/v1/models", 200, `{"data":[{"created":0,"id":"mock-model","object":"model","owned_by":"mock"}],"object":"list"}`},
		{"GET", "/v1/responses", 404, `{"error":{"message":"unsupported GET /v1/responses","type":"not_found"}}`},
		{"POST", "/v1/other", 404, `{"error":{"message":"unsupported POST /v1/other","type":"not_found"}}`},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, strings.TrimSuffix(s.URL(), "/v1")+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := struct {
			Status int
			Body   string
		}{resp.StatusCode, string(b)}
		want := struct {
			Status int
			Body   string
		}{tt.wantStatus, tt.wantBody}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.method, tt.path, diff)
		}
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("recorded %d requests, want 3", n)
	}
}

func TestPatchCommand(t *testing.T) {
	got := PatchCommand("/a/b.txt", "one\ntwo\n")
	want := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: /a/b.txt\n+one\n+two\n*** End Patch\nEOF"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PatchCommand (-want +got):\n%s", diff)
	}
}

// TestOutputSchema: the schema a request constrains the answer to, as
// Codex sends a turn's outputSchema (text.format json_schema), is read
// back; other formats are none.
func TestOutputSchema(t *testing.T) {
	s := start(t, Config{})
	for _, tc := range []struct {
		name         string
		text         any
		schema, with string
	}{
		{"json schema", map[string]any{"format": map[string]any{"type": "json_schema", "name": "codex_output_schema", "strict": true,
			"schema": map[string]any{"type": "object"}}}, `{"type":"object"}`, "codex_output_schema"},
		{"plain text format", map[string]any{"format": map[string]any{"type": "text"}}, "", ""},
		{"no text member", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := body(msg("user", "hi"))
			if tc.text != nil {
				b["text"] = tc.text
			}
			post(t, s.URL(), b)
			reqs := s.Requests()
			schema, name := reqs[len(reqs)-1].OutputSchema()
			if got := (struct{ Schema, Name string }{string(schema), name}); got != (struct{ Schema, Name string }{tc.schema, tc.with}) {
				t.Errorf("OutputSchema = %+v, want %q %q", got, tc.schema, tc.with)
			}
		})
	}
}
