package testscripts

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// anthropicMock is a loopback Anthropic Messages API for running the real
// Claude Code CLI offline: each request of the main conversation (the one
// whose tools include ToolSearch) gets the next step of a script, streamed
// as Claude Code expects (SSE: message_start, content blocks with their
// deltas, message_delta with the stop reason, message_stop); side requests
// (titles, checks) get a short text.
type anthropicMock struct {
	t      *testing.T
	srv    *httptest.Server
	script []mockStep

	mu      sync.Mutex
	results [][]mockResult // the tool results each main request brought, in order
	paths   []string
}

// mockStep is what the model answers at one step of the main
// conversation, given the tool results of the previous one: tool calls,
// or text to end.
type mockStep func(prev []mockResult) []mockBlock

// mockBlock is a content block the model sends: a tool_use (Tool and
// Input) or text.
type mockBlock struct {
	Tool  string
	Input any
	Text  string
}

// mockResult is a tool_result Claude Code sent back.
type mockResult struct {
	ToolUseID string
	Text      string
	IsError   bool
}

func startAnthropicMock(t *testing.T, script []mockStep) *anthropicMock {
	m := &anthropicMock{t: t, script: script}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *anthropicMock) URL() string { return m.srv.URL }

// mainResults returns the tool results of every main request so far.
func (m *anthropicMock) mainResults() [][]mockResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]mockResult(nil), m.results...)
}

type mockRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (m *anthropicMock) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.paths = append(m.paths, r.Method+" "+r.URL.Path)
	m.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not in the mock"}}`, http.StatusNotFound)
		return
	}
	var req mockRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	isMain := false
	for _, tl := range req.Tools {
		if tl.Name == "ToolSearch" {
			isMain = true
		}
	}
	if !isMain {
		m.respond(w, req.Stream, []mockBlock{{Text: "ok"}})
		return
	}
	// The step is the number of main requests so far: Claude Code
	// rewrites the history it sends (deferred tools), so counting the
	// model's turns in it does not work.
	var prev []mockResult
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		prev = toolResults(req.Messages[n-1].Content)
	}
	m.mu.Lock()
	step := len(m.results)
	m.results = append(m.results, prev)
	m.mu.Unlock()
	blocks := []mockBlock{{Text: "(the script has ended)"}}
	if step < len(m.script) {
		blocks = m.script[step](prev)
	}
	m.respond(w, req.Stream, blocks)
}

// toolResults reads the tool_result blocks of a user message.
func toolResults(content json.RawMessage) []mockResult {
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	var out []mockResult
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		r := mockResult{ToolUseID: b.ToolUseID, IsError: b.IsError}
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			r.Text = s
		} else {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			_ = json.Unmarshal(b.Content, &parts)
			for _, p := range parts {
				r.Text += p.Text
			}
		}
		out = append(out, r)
	}
	return out
}

// respond writes the model's message: streamed as SSE, or whole.
func (m *anthropicMock) respond(w http.ResponseWriter, stream bool, blocks []mockBlock) {
	writeModelMessage(w, stream, blocks, fmt.Sprint(len(m.mainResults())))
}

// writeModelMessage writes the model's message: streamed as SSE, or whole.
// Its tool_use ids are toolu_<idPrefix>_<index>.
func writeModelMessage(w http.ResponseWriter, stream bool, blocks []mockBlock, idPrefix string) {
	stop := "end_turn"
	var content []map[string]any
	for i, b := range blocks {
		if b.Tool != "" {
			stop = "tool_use"
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%s_%d", idPrefix, i), "name": b.Tool, "input": b.Input})
		} else {
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		}
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msg := map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": "claude-mock",
		"stop_sequence": nil, "usage": usage}
	if !stream {
		msg["content"], msg["stop_reason"] = content, stop
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	msg["content"], msg["stop_reason"] = []any{}, nil
	event("message_start", map[string]any{"type": "message_start", "message": msg})
	for i, c := range content {
		if c["type"] == "tool_use" {
			input, _ := json.Marshal(c["input"])
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		} else {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
