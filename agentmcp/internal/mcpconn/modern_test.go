package mcpconn

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// modernMeta is the _meta a 2026-07-28 client (Claude Code) puts on every
// request; caps are its clientCapabilities.
func modernMeta(version, caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.331"},` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// TestModernRevision: each request is served in the revision its _meta
// declares; the modern one gets server/discover, resultType and serverInfo
// on every result, -32601 for the methods it removed and the
// specification's errors for an unsupported version or missing
// capabilities, while a legacy request on the same connection sees
// exactly what it always did.
func TestModernRevision(t *testing.T) {
	seen := make(chan *ToolCall, 16)
	handler := handlerFunc(func(_ context.Context, c *ToolCall) (*ToolResult, error) {
		seen <- c
		switch c.Name {
		case "ask":
			return &ToolResult{Input: &InputRequired{State: "st-1", Requests: map[string]InputRequest{
				"approval-1": {Method: "elicitation/create", Params: map[string]any{"mode": "form", "message": "ok?"}},
			}}}, nil
		case "missing":
			return nil, proxyerr.New(proxyerr.ErrSessionNotFound, nil, "no session with agent_id %q", "x")
		}
		return &ToolResult{Text: "called " + c.Name}, nil
	})
	c := start(t, Config{Handler: handler, ServerInfo: ServerInfo{Name: "srv", Version: "1.0"}, Instructions: "be nice",
		Tools: json.RawMessage(`[{"name":"a","inputSchema":{"type":"object"}}]`)}, false)
	m26 := modernMeta("2026-07-28", `{"elicitation":{"form":{},"url":{}}}`)
	const info = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}`
	tests := []struct {
		name, method, params string
		want                 string // the result, or the error code and message
	}{
		{"discover", "server/discover", `{` + m26 + `}`,
			`{"cacheScope":"public","capabilities":{"logging":{},"tools":{"listChanged":false}},"instructions":"be nice","supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"discover without a version", "server/discover", `{}`,
			`-32602 server/discover needs _meta["io.modelcontextprotocol/protocolVersion"] (one of [2026-07-28])`},
		{"unsupported version", "server/discover", `{` + modernMeta("2099-01-01", `{}`) + `}`,
			`-32022 Unsupported protocol version "2099-01-01" (this server speaks [2026-07-28 2025-11-25 2025-06-18 2025-03-26 2024-11-05])`},
		{"no capabilities", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
			`-32602 the request's _meta has no "io.modelcontextprotocol/clientCapabilities" object (required in MCP 2026-07-28)`},
		{"tools/list", "tools/list", `{` + m26 + `}`,
			`{"cacheScope":"public","tools":[{"name":"a","inputSchema":{"type":"object"}}],"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"prompts/list", "prompts/list", `{` + m26 + `}`, `{"cacheScope":"private","prompts":[],"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"resources/list", "resources/list", `{` + m26 + `}`, `{"cacheScope":"private","resources":[],"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"initialize is gone", "initialize", `{"protocolVersion":"2025-11-25",` + m26 + `}`,
			`-32601 initialize is not part of MCP 2026-07-28 (stateless: no handshake, ping, log level or subscriptions)`},
		{"ping is gone", "ping", `{` + m26 + `}`,
			`-32601 ping is not part of MCP 2026-07-28 (stateless: no handshake, ping, log level or subscriptions)`},
		{"subscribe is gone", "resources/subscribe", `{"uri":"x",` + m26 + `}`,
			`-32601 resources/subscribe is not part of MCP 2026-07-28 (stateless: no handshake, ping, log level or subscriptions)`},
		{"tools/call", "tools/call", `{"name":"a","arguments":{},` + m26 + `}`,
			`{"content":[{"text":"called a","type":"text"}],"resultType":"complete",` + info + `}`},
		{"input required", "tools/call", `{"name":"ask","arguments":{},` + m26 + `}`,
			`{"resultType":"input_required","requestState":"st-1","inputRequests":{"approval-1":{"method":"elicitation/create","params":{"message":"ok?","mode":"form"}}},` + info + `}`},
		{"no -32002 in the modern revision", "tools/call", `{"name":"missing","arguments":{},` + m26 + `}`,
			`-32602 no session with agent_id "x"`},
		{"a retry's requestState must be a string", "tools/call", `{"name":"a","arguments":{},"requestState":7,` + m26 + `}`,
			`-32602 requestState must be a string`},
		{"legacy tools/call", "tools/call", `{"name":"a","arguments":{}}`, `{"content":[{"text":"called a","type":"text"}]}`},
		{"legacy SESSION_NOT_FOUND", "tools/call", `{"name":"missing","arguments":{}}`, `-32002 no session with agent_id "x"`},
		{"legacy ping", "ping", `{}`, `{}`},
		{"a legacy version in _meta is legacy", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`,
			`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`},
	}
	for _, tt := range tests {
		if got := c.answer(tt.method, tt.params); got != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.name, got, tt.want)
		}
	}
	// What each call knew of its client: the modern ones declared form
	// elicitation; the legacy ones had no initialize that did.
	close(seen)
	var modern, legacy int
	for call := range seen {
		if call.Modern != call.Elicitation {
			t.Errorf("call %s: modern %v, elicitation %v", call.Name, call.Modern, call.Elicitation)
		}
		if call.Modern {
			modern++
		} else {
			legacy++
		}
	}
	if modern != 3 || legacy != 2 {
		t.Errorf("%d modern and %d legacy calls reached the handler, want 3 and 2", modern, legacy)
	}
}

// TestModernRetryFields: a retry's requestState and inputResponses reach
// the handler verbatim; elicitation is what this request declared.
func TestModernRetryFields(t *testing.T) {
	seen := make(chan *ToolCall, 1)
	c := start(t, Config{Handler: handlerFunc(func(_ context.Context, call *ToolCall) (*ToolResult, error) {
		seen <- call
		return &ToolResult{Text: "ok"}, nil
	})}, false)
	c.call("tools/call", json.RawMessage(`{"name":"a","arguments":{"x":1},"requestState":"S","inputResponses":{"k":{"action":"cancel"}},`+
		modernMeta("2026-07-28", `{"elicitation":{}}`)+`}`))
	call := <-seen
	if !call.Modern || !call.Elicitation || call.RequestState != "S" || string(call.InputResponses) != `{"k":{"action":"cancel"}}` {
		t.Errorf("call: modern %v elicitation %v state %q responses %s", call.Modern, call.Elicitation, call.RequestState, call.InputResponses)
	}
	c.call("tools/call", json.RawMessage(`{"name":"a","arguments":{},`+modernMeta("2026-07-28", `{"roots":{}}`)+`}`))
	if call := <-seen; call.Elicitation {
		t.Error("a request without the elicitation capability was taken to have it")
	}
	c.call("tools/call", json.RawMessage(`{"name":"a","arguments":{},`+modernMeta("2026-07-28", `{"elicitation":{"url":{}}}`)+`}`))
	if call := <-seen; call.Elicitation {
		t.Error("url-only elicitation was taken for forms")
	}
}

// TestPinnedLegacy: with ProtocolLegacy, server/discover is an unknown
// method (a client falls back to initialize) and _meta is not read.
func TestPinnedLegacy(t *testing.T) {
	c := start(t, Config{Protocol: ProtocolLegacy}, false)
	m := c.call("server/discover", json.RawMessage(`{`+modernMeta("2026-07-28", `{}`)+`}`))
	if code, msg := errorOf(t, m); code != jsonrpcframe.CodeMethodNotFound || !strings.Contains(msg, "send initialize") {
		t.Errorf("server/discover: %d %s", code, msg)
	}
	m = c.call("tools/call", json.RawMessage(`{"name":"a","arguments":{},`+modernMeta("2026-07-28", `{}`)+`}`))
	if got := string(m.Result); got != `{"content":[{"text":"called a","type":"text"}]}` {
		t.Errorf("tools/call: %s", got)
	}
}
