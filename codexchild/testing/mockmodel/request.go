package mockmodel

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Request is one HTTP request the server received, as recorded.
type Request struct {
	// N numbers the requests from 1 in the order their bodies were read.
	N int
	// Time is when the request was recorded.
	Time time.Time
	// Method and Path are the HTTP method and URL path.
	Method string
	Path   string
	// Header holds the request headers, Authorization included.
	Header http.Header
	// RawBody is the request body as received.
	RawBody []byte
	// Body is the body parsed as a JSON object; nil when it is not one.
	Body map[string]any
	// LastUserText is the text of the last user message of the input that is
	// not a context block injected by Codex; "" when there is none. For a
	// Messages API request: the text of the last user message that has
	// text of its own, without Claude Code's <system-reminder> blocks.
	LastUserText string
	// LastItemType is the type of the last input item ("message",
	// "function_call_output", ...); "" when the input is empty. For a
	// Messages API request: "tool_result" when the last message carries
	// tool results, else "message".
	LastItemType string
	// ToolNames lists the tools offered, in order. A tool inside a namespace
	// (the tools of an MCP server) is listed as "<namespace>.<name>".
	ToolNames []string
}

// Input returns the items of the body's input array that are JSON objects.
func (r *Request) Input() []map[string]any {
	arr, _ := r.Body["input"].([]any)
	items := make([]map[string]any, 0, len(arr))
	for _, v := range arr {
		if m, ok := v.(map[string]any); ok {
			items = append(items, m)
		}
	}
	return items
}

// LastItem returns the last item of the input, or nil.
func (r *Request) LastItem() map[string]any {
	items := r.Input()
	if len(items) == 0 {
		return nil
	}
	return items[len(items)-1]
}

// ToolOutput returns the output of the last input item when it is a tool
// output (function_call_output or custom_tool_call_output; for a Messages
// API request, the tool_result blocks of the last message), flattened to
// text as described in the package documentation.
func (r *Request) ToolOutput() (string, bool) {
	if r.isMessages() {
		return r.messagesToolOutput()
	}
	last := r.LastItem()
	switch itemType(last) {
	case "function_call_output", "custom_tool_call_output":
		return outputText(last["output"]), true
	}
	return "", false
}

// InputTexts returns every piece of text the model was given: the
// instructions (a Messages request's system prompt), the text of every
// message of every role, the arguments of every tool call and every tool
// output, in order.
func (r *Request) InputTexts() []string {
	if r.isMessages() {
		return r.messagesInputTexts()
	}
	var texts []string
	if s, ok := r.Body["instructions"].(string); ok && s != "" {
		texts = append(texts, s)
	}
	for _, item := range r.Input() {
		switch itemType(item) {
		case "message":
			texts = appendContentTexts(texts, item["content"])
		case "function_call_output", "custom_tool_call_output":
			texts = append(texts, outputText(item["output"]))
		default:
			for _, k := range []string{"arguments", "input", "text"} {
				if s, ok := item[k].(string); ok && s != "" {
					texts = append(texts, s)
				}
			}
			texts = appendContentTexts(texts, item["content"])
		}
	}
	return texts
}

// ThreadID returns the Codex thread the request is for, from the thread-id
// header (0.153+), else session-id or session_id (0.104); "" when absent.
func (r *Request) ThreadID() string {
	for _, k := range []string{"Thread-Id", "Session-Id", "Session_id"} {
		if v := r.Header.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// OutputSchema returns the JSON Schema the request constrains the
// model's answer to (the Responses API's text.format of type json_schema,
// as Codex sends a turn's outputSchema), and its name; nil when there is
// none.
func (r *Request) OutputSchema() (schema json.RawMessage, name string) {
	text, _ := r.Body["text"].(map[string]any)
	format, _ := text["format"].(map[string]any)
	if format["type"] != "json_schema" {
		return nil, ""
	}
	name, _ = format["name"].(string)
	return marshal(format["schema"]), name
}

// HasTool tells whether the request offered a tool with this name (use
// "<namespace>.<name>" for a namespaced tool).
func (r *Request) HasTool(name string) bool {
	for _, n := range r.ToolNames {
		if n == name {
			return true
		}
	}
	return false
}

// newRequest parses a request body and fills the derived fields.
func newRequest(n int, hr *http.Request, raw []byte) Request {
	r := Request{
		N:       n,
		Time:    time.Now(),
		Method:  hr.Method,
		Path:    hr.URL.Path,
		Header:  hr.Header.Clone(),
		RawBody: raw,
	}
	var body map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &body) == nil {
		r.Body = body
	}
	r.ToolNames = toolNames(r.Body["tools"])
	if r.isMessages() {
		r.fillMessages()
		return r
	}
	items := r.Input()
	if len(items) > 0 {
		r.LastItemType = itemType(items[len(items)-1])
	}
	r.LastUserText = lastUserText(items)
	return r
}

// itemType is an input item's type; an item without one is a message, as in
// the Responses API.
func itemType(item map[string]any) string {
	if item == nil {
		return ""
	}
	if t, ok := item["type"].(string); ok {
		return t
	}
	return "message"
}

// injectedPrefixes start the user messages Codex adds as context.
// (<turn_aborted>: a turn interrupted, or still running in the source of
// a fork.)
var injectedPrefixes = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<turn_aborted>"}

func lastUserText(items []map[string]any) string {
	texts := userTexts(items)
	if len(texts) == 0 {
		return ""
	}
	return texts[len(texts)-1]
}

// userTexts returns the texts of the user messages of the input that are
// not context blocks injected by Codex, in order.
func userTexts(items []map[string]any) []string {
	var texts []string
	for _, item := range items {
		if itemType(item) != "message" || item["role"] != "user" {
			continue
		}
		t := contentText(item["content"])
		trimmed := strings.TrimLeft(t, " \t\r\n")
		injected := false
		for _, p := range injectedPrefixes {
			if strings.HasPrefix(trimmed, p) {
				injected = true
				break
			}
		}
		if !injected {
			texts = append(texts, t)
		}
	}
	return texts
}

// EarlierUserTexts returns the user texts of the input before the last one
// (see LastUserText): what the model was told in earlier turns of the
// thread, such as a resumed or forked thread's history. For a Messages API
// request it is nil.
func (r *Request) EarlierUserTexts() []string {
	if r.isMessages() {
		return nil
	}
	texts := userTexts(r.Input())
	if len(texts) == 0 {
		return nil
	}
	return texts[:len(texts)-1]
}

// contentText joins the text parts of a message content (a string or a list
// of parts) with newlines.
func contentText(content any) string {
	return strings.Join(appendContentTexts(nil, content), "\n")
}

func appendContentTexts(texts []string, content any) []string {
	switch c := content.(type) {
	case string:
		return append(texts, c)
	case []any:
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					texts = append(texts, s)
				}
			}
		}
	}
	return texts
}

// outputText flattens a tool output: a string as is, a list of content items
// as their texts joined by newlines, anything else as JSON.
func outputText(out any) string {
	switch o := out.(type) {
	case string:
		return o
	case []any:
		if texts := appendContentTexts(nil, o); len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	case nil:
		return ""
	}
	return string(marshal(out))
}

func toolNames(tools any) []string {
	arr, _ := tools.([]any)
	var names []string
	for _, v := range arr {
		t, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := t["name"].(string)
		if name == "" {
			if fn, ok := t["function"].(map[string]any); ok {
				name, _ = fn["name"].(string)
			}
		}
		if t["type"] == "namespace" {
			inner, _ := t["tools"].([]any)
			for _, iv := range inner {
				if it, ok := iv.(map[string]any); ok {
					if n, ok := it["name"].(string); ok {
						names = append(names, name+"."+n)
					}
				}
			}
			continue
		}
		if name == "" {
			name, _ = t["type"].(string)
		}
		names = append(names, name)
	}
	return names
}
