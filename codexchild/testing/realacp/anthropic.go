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

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
)

// Anthropic is a loopback Anthropic Messages API for running
// claude-agent-acp (Claude Code underneath) offline. A request of the main
// conversation (its tools include Bash) is answered from the last user
// message, by the keywords of [KeyHang], [KeyRunTool] (Bash) and
// [KeyCallTool]; a hanging answer is a stream that stops after
// message_start (until the client goes away, or [HangFor]), and Claude
// Code's non-streaming retry of it gets "LATE ANSWER TO TURN FOUR".
//
// Side requests (titles, checks) get a short text.
type Anthropic struct {
	loopback

	mu   sync.Mutex
	main int // main requests so far
}

// HangFor is how long a HANG request of the mocks stalls before its stream
// is cut.
const HangFor = 5 * time.Second

// StartAnthropic starts the mock; it is closed at the end of the test.
func StartAnthropic(t testing.TB) *Anthropic {
	m := &Anthropic{}
	m.loopback = startLoopback(t, m.serve)
	return m
}

// MainRequests returns the number of main requests so far.
func (m *Anthropic) MainRequests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.main
}

// AnthropicRequest is what the mocks read of a Messages API request.
type AnthropicRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// AnthropicBlock is a content block the model sends: a tool_use (Tool and
// Input) or text.
type AnthropicBlock = mockmodel.Block

// ReadAnthropic reads a POST …/v1/messages request. For any other
// request, or a body that is not such JSON, it answers 404 or 400 itself
// and returns false.
func ReadAnthropic(w http.ResponseWriter, r *http.Request) (AnthropicRequest, bool) {
	var req AnthropicRequest
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not in the mock"}}`, http.StatusNotFound)
		return req, false
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return req, false
	}
	return req, true
}

func (m *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	req, ok := ReadAnthropic(w, r)
	if !ok {
		return
	}
	isMain := false
	for _, tl := range req.Tools {
		isMain = isMain || tl.Name == "Bash"
	}
	if !isMain || len(req.Messages) == 0 {
		WriteAnthropic(w, req.Stream, []AnthropicBlock{{Text: "ok"}}, "side")
		return
	}
	m.mu.Lock()
	m.main++
	n := m.main
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	texts, results := anthropicUserContent(last.Content)
	var tools []string
	for _, tl := range req.Tools {
		tools = append(tools, tl.Name)
	}
	mv := script(texts, results, tools)
	var blocks []AnthropicBlock
	switch {
	case mv.Hang && !req.Stream:
		// Claude Code's non-streaming retry of the stalled request.
		blocks = []AnthropicBlock{{Text: "LATE ANSWER TO TURN FOUR"}}
	case mv.Hang:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message_start\ndata: %s\n\n", `{"type":"message_start","message":{"id":"msg_hang","type":"message","role":"assistant","model":"claude-mock","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
		w.(http.Flusher).Flush()
		m.hung <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(HangFor):
		}
		return
	case mv.Tool != "":
		blocks = []AnthropicBlock{{Tool: mv.Tool, Input: mv.Args}}
	default:
		blocks = []AnthropicBlock{{Text: mv.Text}}
	}
	WriteAnthropic(w, req.Stream, blocks, fmt.Sprint(n))
}

// anthropicUserContent returns the text and the tool results of a user
// message.
func anthropicUserContent(content json.RawMessage) (string, []string) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(content, &blocks)
	var text strings.Builder
	var results []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			text.WriteString("\n")
		case "tool_result":
			var r string
			if json.Unmarshal(b.Content, &r) != nil {
				var parts []struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(b.Content, &parts)
				for _, p := range parts {
					r += p.Text
				}
			}
			results = append(results, r)
		}
	}
	return text.String(), results
}

// WriteAnthropic writes the model's message: streamed as SSE, or whole.
// Its tool_use ids are toolu_<idPrefix>_<index>. It is
// [mockmodel.WriteMessage], the writer of the mock that bin/mockmodel
// serves.
func WriteAnthropic(w http.ResponseWriter, stream bool, blocks []AnthropicBlock, idPrefix string) {
	mockmodel.WriteMessage(w, stream, blocks, idPrefix)
}
