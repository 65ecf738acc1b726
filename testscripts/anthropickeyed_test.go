package testscripts

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
)

// keyedMock is a loopback Anthropic Messages API whose answer to a request
// depends on what the request holds, not on how many came before: an
// interactive Claude Code has several requests in flight at once (titles,
// the lead's turns, turns started by a pushed message), which a script of
// numbered steps cannot play. Every request is kept, so a test can count
// what the model was shown.
type keyedMock struct {
	t     *testing.T
	srv   *httptest.Server
	reply func(r *modelRequest) []mockBlock

	mu   sync.Mutex
	reqs []*modelRequest
}

// modelRequest is one request to the Messages API, as the model sees it.
type modelRequest struct {
	N        int      // its number, from 0, in arrival order
	Main     bool     // the request offers ToolSearch: a turn of the conversation, not a side request
	Tools    []string // the names of the tools offered
	System   string   // the system prompt's text
	Messages []modelMessage
}

// modelMessage is a message of a request's history.
type modelMessage struct {
	Role   string
	Blocks []modelBlock
}

// modelBlock is a content block: text, tool_use (Name, ID, Input) or
// tool_result (ToolUseID, Text, IsError).
type modelBlock struct {
	Type      string
	Text      string
	Name      string
	ID        string
	Input     json.RawMessage
	ToolUseID string
	IsError   bool
}

// startKeyedMock starts the mock; reply answers every request of the
// conversation (Main), and side requests get a short text.
func startKeyedMock(t *testing.T, reply func(r *modelRequest) []mockBlock) *keyedMock {
	m := &keyedMock{t: t, reply: reply}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *keyedMock) URL() string { return m.srv.URL }

// requests returns every request so far, in arrival order.
func (m *keyedMock) requests() []*modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*modelRequest(nil), m.reqs...)
}

// lastMain returns the latest request of the conversation, or nil.
func (m *keyedMock) lastMain() *modelRequest {
	reqs := m.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Main {
			return reqs[i]
		}
	}
	return nil
}

// dump writes a short account of every request to the test log: its
// last message, clipped, on one line.
func (m *keyedMock) dump() {
	for _, r := range m.requests() {
		last := strings.Join(strings.Fields(r.lastText()), " ")
		if len(last) > 400 {
			last = last[:200] + " … " + last[len(last)-200:]
		}
		m.t.Logf("model request %d (main %v, %d messages): last: %s", r.N, r.Main, len(r.Messages), last)
	}
}

func (m *keyedMock) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not in the mock"}}`, http.StatusNotFound)
		return
	}
	req, stream, err := parseModelRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	req.N = len(m.reqs)
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	blocks := []mockBlock{{Text: "ok"}}
	if req.Main {
		blocks = m.reply(req)
	}
	realacp.WriteAnthropic(w, stream, blocks, fmt.Sprint("k", req.N))
}

// parseModelRequest reads a Messages API request body: content may be a
// string or blocks, and a tool_result's content a string or text blocks.
func parseModelRequest(body []byte) (*modelRequest, bool, error) {
	var raw struct {
		Stream bool            `json:"stream"`
		System json.RawMessage `json:"system"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, false, fmt.Errorf("parse messages request: %w", err)
	}
	req := &modelRequest{System: textOf(raw.System)}
	for _, tl := range raw.Tools {
		req.Tools = append(req.Tools, tl.Name)
		req.Main = req.Main || tl.Name == "ToolSearch"
	}
	for _, msg := range raw.Messages {
		mm := modelMessage{Role: msg.Role}
		var s string
		if json.Unmarshal(msg.Content, &s) == nil {
			mm.Blocks = []modelBlock{{Type: "text", Text: s}}
		} else {
			var blocks []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				Name      string          `json:"name"`
				ID        string          `json:"id"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				IsError   bool            `json:"is_error"`
				Content   json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(msg.Content, &blocks)
			for _, b := range blocks {
				mb := modelBlock{Type: b.Type, Text: b.Text, Name: b.Name, ID: b.ID, Input: b.Input, ToolUseID: b.ToolUseID, IsError: b.IsError}
				if b.Type == "tool_result" {
					mb.Text = textOf(b.Content)
				}
				mm.Blocks = append(mm.Blocks, mb)
			}
		}
		req.Messages = append(req.Messages, mm)
	}
	return req, raw.Stream, nil
}

// textOf is the text of a string or of an array of text blocks.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// lastText is the text of the last message: its text blocks and tool
// results.
func (r *modelRequest) lastText() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].text()
}

func (mm modelMessage) text() string {
	var b strings.Builder
	for _, bl := range mm.Blocks {
		if bl.Type == "text" || bl.Type == "tool_result" {
			b.WriteString(bl.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// firstUserText is the text of the first message of r's history.
func (r *modelRequest) firstUserText() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[0].text()
}

// called counts the model's calls of tool in the history.
func (r *modelRequest) called(tool string) int {
	n := 0
	for _, mm := range r.Messages {
		for _, bl := range mm.Blocks {
			if bl.Type == "tool_use" && bl.Name == tool {
				n++
			}
		}
	}
	return n
}

// results returns the text of every tool result in the history, oldest
// first.
func (r *modelRequest) results() []mockResult {
	var out []mockResult
	for _, mm := range r.Messages {
		for _, bl := range mm.Blocks {
			if bl.Type == "tool_result" {
				out = append(out, mockResult{ToolUseID: bl.ToolUseID, Text: bl.Text, IsError: bl.IsError})
			}
		}
	}
	return out
}

// pushed counts the occurrences of s in the text blocks of r's history
// (not in tool results, not in the model's tool calls): a message that
// reached the model outside any tool.
func (r *modelRequest) pushed(s string) int {
	n := 0
	for _, mm := range r.Messages {
		for _, bl := range mm.Blocks {
			if bl.Type == "text" {
				// A teammate-message's summary attribute repeats a short
				// text (the atm CLI's automatic summary): one message.
				n += strings.Count(summaryAttr.ReplaceAllString(bl.Text, ""), s)
			}
		}
	}
	return n
}

// summaryAttr is the summary="…" of Claude Code's <teammate-message>.
var summaryAttr = regexp.MustCompile(`summary="[^"]*"`)

// pushedText is the first text block of r's history that holds s.
func (r *modelRequest) pushedText(s string) string {
	for _, mm := range r.Messages {
		for _, bl := range mm.Blocks {
			if bl.Type == "text" && strings.Contains(bl.Text, s) {
				return bl.Text
			}
		}
	}
	return ""
}
