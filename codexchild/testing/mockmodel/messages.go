package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// This file is the Anthropic Messages API of the mock (POST /v1/messages),
// which Claude Code and claude-agent-acp call: reading its requests and
// writing its answers.

// Block is one content block of a Messages answer: a tool_use (Tool and
// Input) or text.
type Block struct {
	Tool  string // the tool's name; "" for a text block
	Input any    // the tool's input, encoded as JSON
	Text  string
}

// Messages answer keywords that differ from the Responses ones.
const (
	// MessagesShellTool is the tool RUN_SHELL calls in a Messages answer:
	// Claude Code's shell.
	MessagesShellTool = "Bash"
	// lastToolResult is the LastItemType of a Messages request whose last
	// user message carries tool results.
	lastToolResult = "tool_result"
)

// systemReminder starts the text blocks Claude Code adds to a user message
// as context; they are not the user's text.
const systemReminder = "<system-reminder>"

// isMessages reports whether the body is a Messages API request.
func (r *Request) isMessages() bool {
	_, ok := r.Body["messages"].([]any)
	return ok && r.Body["input"] == nil
}

// messages returns the body's messages that are JSON objects.
func (r *Request) messages() []map[string]any {
	arr, _ := r.Body["messages"].([]any)
	msgs := make([]map[string]any, 0, len(arr))
	for _, v := range arr {
		if m, ok := v.(map[string]any); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// contentBlocks returns a message content as blocks: a string is one text
// block.
func contentBlocks(content any) []map[string]any {
	switch c := content.(type) {
	case string:
		return []map[string]any{{"type": "text", "text": c}}
	case []any:
		blocks := make([]map[string]any, 0, len(c))
		for _, v := range c {
			if b, ok := v.(map[string]any); ok {
				blocks = append(blocks, b)
			}
		}
		return blocks
	}
	return nil
}

// fillMessages sets LastItemType and LastUserText of a Messages request:
// "tool_result" when the last message is a user message that carries tool
// results, else "message"; the text of the last user message that has
// text of its own (Claude Code's <system-reminder> blocks left out).
func (r *Request) fillMessages() {
	msgs := r.messages()
	if len(msgs) == 0 {
		return
	}
	r.LastItemType = "message"
	last := msgs[len(msgs)-1]
	for _, b := range contentBlocks(last["content"]) {
		if b["type"] == lastToolResult {
			r.LastItemType = lastToolResult
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] != "user" {
			continue
		}
		var texts []string
		for _, b := range contentBlocks(msgs[i]["content"]) {
			if t, ok := b["text"].(string); ok && b["type"] == "text" && !strings.HasPrefix(strings.TrimSpace(t), systemReminder) {
				texts = append(texts, t)
			}
		}
		if len(texts) > 0 {
			r.LastUserText = strings.Join(texts, "\n")
			return
		}
	}
}

// messagesToolOutput returns the text of the tool results of the last
// message, joined by newlines, when it carries any.
func (r *Request) messagesToolOutput() (string, bool) {
	if r.LastItemType != lastToolResult {
		return "", false
	}
	msgs := r.messages()
	var outs []string
	for _, b := range contentBlocks(msgs[len(msgs)-1]["content"]) {
		if b["type"] == lastToolResult {
			outs = append(outs, outputText(b["content"]))
		}
	}
	return strings.Join(outs, "\n"), true
}

// messagesInputTexts is InputTexts for a Messages request: the system
// prompt, then every block of every message (text, tool_use input, tool
// result).
func (r *Request) messagesInputTexts() []string {
	var texts []string
	switch sys := r.Body["system"].(type) {
	case string:
		texts = append(texts, sys)
	case []any:
		texts = appendContentTexts(texts, sys)
	}
	for _, m := range r.messages() {
		for _, b := range contentBlocks(m["content"]) {
			switch b["type"] {
			case "text":
				if t, ok := b["text"].(string); ok {
					texts = append(texts, t)
				}
			case "tool_use":
				texts = append(texts, string(marshal(b["input"])))
			case lastToolResult:
				texts = append(texts, outputText(b["content"]))
			}
		}
	}
	return texts
}

// answerMessages answers a Messages request with the built-in behaviour
// (see the package documentation): tool results, SLOW, CALL_TOOL,
// RUN_SHELL, else MOCK_REPLY.
func (s *Server) answerMessages(w http.ResponseWriter, hr *http.Request, r *Request) {
	stream, _ := r.Body["stream"].(bool)
	id := strconv.Itoa(r.N)
	text := r.LastUserText
	var blocks []Block
	if out, ok := r.messagesToolOutput(); ok {
		blocks = []Block{{Text: "MOCK_DONE: tool output was: " + truncate(out, 200)}}
	} else {
		blocks = []Block{messagesMove(r)}
	}
	if !strings.Contains(text, "SLOW") || r.LastItemType != "message" {
		WriteMessage(w, stream, blocks, id)
		return
	}
	d := 20 * time.Second
	if m := slowRE.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		d = time.Duration(min(n, 120)) * time.Second
	}
	ctx := hr.Context()
	if !stream {
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		WriteMessage(w, false, blocks, id)
		return
	}
	messageStart(w, id)
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(s.cfg.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			messageRest(w, blocks, id)
			return
		case <-tick.C:
			sse(w, "ping", map[string]any{"type": "ping"})
		}
	}
}

// messagesMove is the model's block for a Messages request whose last
// message is the user's: CALL_TOOL, RUN_SHELL, else MOCK_REPLY.
func messagesMove(r *Request) Block {
	text := r.LastUserText
	switch {
	case callToolRE.MatchString(text):
		var input map[string]any
		if m := argsRE.FindStringSubmatch(text); m == nil || json.Unmarshal([]byte(strings.TrimSpace(m[1])), &input) != nil {
			input = map[string]any{}
		}
		return Block{Tool: messagesTool(r, callToolRE.FindStringSubmatch(text)[1]), Input: input}
	case strings.Contains(text, "RUN_SHELL"):
		cmd := "touch mock_shell_probe.txt"
		if m := cmdRE.FindStringSubmatch(text); m != nil {
			cmd = strings.ReplaceAll(strings.TrimSpace(m[1]), `\n`, "\n")
		}
		return Block{Tool: MessagesShellTool, Input: map[string]any{"command": cmd, "description": "Run the mock's command"}}
	}
	return Block{Text: "MOCK_REPLY: " + truncate(withoutLeadingBlocks(text), 500)}
}

// leadingBlockRE matches a tagged block at the start of a text
// ("<session-context>…</session-context>"), such as serve puts in front of
// an ACP agent's prompt.
var leadingBlockRE = regexp.MustCompile(`^<([A-Za-z][\w-]*)[^>]*>`)

// withoutLeadingBlocks returns text without the tagged blocks it starts
// with, trimmed: the user's own words.
func withoutLeadingBlocks(text string) string {
	text = strings.TrimSpace(text)
	for {
		m := leadingBlockRE.FindStringSubmatch(text)
		if m == nil {
			return text
		}
		end := strings.Index(text, "</"+m[1]+">")
		if end < 0 {
			return text
		}
		rest := strings.TrimSpace(text[end+len("</"+m[1]+">"):])
		if rest == "" {
			return text // only blocks: echo them
		}
		text = rest
	}
}

// messagesTool resolves a CALL_TOOL name against the tools the request
// offers: the tool of that name, else one whose name ends with "__" and
// the name (an MCP tool as Claude Code names it, mcp__<server>__<tool>;
// "<server>.<tool>" is read as "<server>__<tool>"), else the name as given.
func messagesTool(r *Request, name string) string {
	if r.HasTool(name) {
		return name
	}
	suffix := "__" + strings.ReplaceAll(name, ".", "__")
	for _, t := range r.ToolNames {
		if strings.HasSuffix(t, suffix) {
			return t
		}
	}
	return name
}

// WriteMessage writes the model's answer to a Messages API request: as
// server-sent events when stream (message_start, each block's start,
// delta and stop, message_delta, message_stop), else as one JSON message.
// Its id is msg_mock_<idPrefix>, its tool_use ids toolu_<idPrefix>_<index>;
// stop_reason is tool_use when a block calls a tool, else end_turn.
func WriteMessage(w http.ResponseWriter, stream bool, blocks []Block, idPrefix string) {
	if !stream {
		msg := newMessage(idPrefix)
		content, stop := messageContent(blocks, idPrefix)
		msg["content"], msg["stop_reason"] = content, stop
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(marshal(msg), '\n'))
		return
	}
	messageStart(w, idPrefix)
	messageRest(w, blocks, idPrefix)
}

// newMessage is the message envelope, without content and stop_reason.
func newMessage(idPrefix string) map[string]any {
	usage := map[string]any{"input_tokens": 10, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	return map[string]any{"id": "msg_mock_" + idPrefix, "type": "message", "role": "assistant", "model": "claude-mock",
		"stop_sequence": nil, "usage": usage}
}

// messageContent is the content of an answer and its stop_reason.
func messageContent(blocks []Block, idPrefix string) ([]map[string]any, string) {
	stop := "end_turn"
	content := make([]map[string]any, 0, len(blocks))
	for i, b := range blocks {
		if b.Tool != "" {
			stop = "tool_use"
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%s_%d", idPrefix, i), "name": b.Tool, "input": b.Input})
		} else {
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		}
	}
	return content, stop
}

// messageStart starts a streamed answer: the headers and message_start.
func messageStart(w http.ResponseWriter, idPrefix string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	msg := newMessage(idPrefix)
	msg["content"], msg["stop_reason"] = []any{}, nil
	sse(w, "message_start", map[string]any{"type": "message_start", "message": msg})
}

// messageRest streams the blocks and ends the message.
func messageRest(w http.ResponseWriter, blocks []Block, idPrefix string) {
	content, stop := messageContent(blocks, idPrefix)
	for i, c := range content {
		if c["type"] == "tool_use" {
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(marshal(c["input"]))}})
		} else {
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// sse writes one event and flushes it.
func sse(w http.ResponseWriter, name string, data map[string]any) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, marshal(data))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
