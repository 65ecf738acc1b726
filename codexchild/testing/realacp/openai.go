package realacp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// OpenAIChat is a loopback OpenAI Chat Completions API (POST
// /v1/chat/completions, streamed as chat.completion.chunk events ending in
// [DONE], or whole) for running agents on that wire offline (opencode,
// Copilot, Qwen). A request that offers tools is of the main conversation
// and is answered by the keywords of the last user message ([KeyHang],
// [KeyRunTool], [KeyCallTool]; tool calls in the wire's tool_calls format);
// one without tools (opencode's title generation, summaries) gets
// [TitleText]. A hanging answer sends the role chunk and then nothing
// until the client goes away (or [HangFor]).
type OpenAIChat struct {
	loopback

	mu    sync.Mutex
	main  int        // main requests so far
	side  int        // requests without tools so far
	tools [][]string // the tools each main request offered
}

// TitleText is what the model of [OpenAIChat] answers a request without
// tools (opencode's title generation).
const TitleText = "Mock session title"

// StartOpenAIChat starts the mock; it is closed at the end of the test.
// Its base URL for an OpenAI-compatible provider is URL()+"/v1".
func StartOpenAIChat(t testing.TB) *OpenAIChat {
	m := &OpenAIChat{}
	m.loopback = startLoopback(t, m.serve)
	return m
}

// Requests returns the number of main requests (with tools) and of side
// requests (without) so far.
func (m *OpenAIChat) Requests() (main, side int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.main, m.side
}

// Tools returns the names of the tools the last main request offered.
func (m *OpenAIChat) Tools() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.tools) == 0 {
		return nil
	}
	return m.tools[len(m.tools)-1]
}

type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns a message's content: a string, or the text of its parts.
func (c chatMessage) text() string {
	var s string
	if json.Unmarshal(c.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (m *OpenAIChat) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not in the mock","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var tools []string
	for _, tl := range req.Tools {
		tools = append(tools, tl.Function.Name)
	}
	m.mu.Lock()
	if len(tools) == 0 {
		m.side++
	} else {
		m.main++
		m.tools = append(m.tools, tools)
	}
	n := m.main + m.side
	m.mu.Unlock()
	if len(tools) == 0 {
		writeChat(w, req, move{Text: TitleText}, n)
		return
	}
	// The last user message, and the tool results after the model's last
	// message.
	var prompt string
	var results []string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := req.Messages[i]
		if msg.Role == "tool" {
			results = append([]string{msg.text()}, results...)
			continue
		}
		if msg.Role == "user" {
			prompt = msg.text()
		}
		break
	}
	if len(results) == 0 {
		for i := len(req.Messages) - 1; i >= 0 && prompt == ""; i-- {
			if req.Messages[i].Role == "user" {
				prompt = req.Messages[i].text()
			}
		}
	}
	mv := script(prompt, results, tools)
	if mv.Hang {
		w.Header().Set("Content-Type", "text/event-stream")
		writeChunk(w, req.Model, n, map[string]any{"role": "assistant", "content": ""}, nil)
		w.(http.Flusher).Flush()
		m.hung <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(HangFor):
		}
		return
	}
	writeChat(w, req, mv, n)
}

// writeChat writes the model's answer mv to req: streamed as
// chat.completion.chunk events, or whole. Its ids end in n.
func writeChat(w http.ResponseWriter, req chatRequest, mv move, n int) {
	finish := "stop"
	var calls []map[string]any
	if mv.Tool != "" {
		finish = "tool_calls"
		args, _ := json.Marshal(mv.Args)
		calls = []map[string]any{{"index": 0, "id": fmt.Sprintf("call_mock_%d", n), "type": "function",
			"function": map[string]any{"name": mv.Tool, "arguments": string(args)}}}
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": mv.Text}
		if calls != nil {
			msg["content"], msg["tool_calls"] = nil, calls
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-mock-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	writeChunk(w, req.Model, n, map[string]any{"role": "assistant", "content": ""}, nil)
	if mv.Text != "" {
		writeChunk(w, req.Model, n, map[string]any{"content": mv.Text}, nil)
	}
	if calls != nil {
		writeChunk(w, req.Model, n, map[string]any{"tool_calls": calls}, nil)
	}
	writeChunk(w, req.Model, n, map[string]any{}, &finish)
	b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-mock-%d", n), "object": "chat.completion.chunk",
		"created": time.Now().Unix(), "model": req.Model, "choices": []any{}, "usage": usage})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

// writeChunk writes one chat.completion.chunk event with delta and, at the
// end, the finish reason.
func writeChunk(w io.Writer, model string, n int, delta map[string]any, finish *string) {
	b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-mock-%d", n), "object": "chat.completion.chunk",
		"created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	fmt.Fprintf(w, "data: %s\n\n", b)
}
