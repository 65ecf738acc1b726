package testscripts

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
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
type mockBlock = realacp.AnthropicBlock

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

// mockRequest is what the mock reads of a request.
type mockRequest = realacp.AnthropicRequest

func (m *anthropicMock) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.paths = append(m.paths, r.Method+" "+r.URL.Path)
	m.mu.Unlock()
	req, ok := realacp.ReadAnthropic(w, r)
	if !ok {
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
	realacp.WriteAnthropic(w, stream, blocks, fmt.Sprint(len(m.mainResults())))
}
