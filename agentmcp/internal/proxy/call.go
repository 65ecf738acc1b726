package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// toolCall is one tools/call request from the client.
type toolCall struct {
	id    jsonrpcframe.ID
	rawID json.RawMessage // id's JSON, for every event of the call
	name  string
	args  args
	prog  *progress
	// answer is the response answerEarly encoded, with the client's pipe
	// reserved for it.
	answer *jsonrpcframe.Message
	// router read the call (nil for calls made otherwise).
	router *router
}

// toolResult is a tool's answer: text content, structuredContent and the
// isError flag (a Codex-side failure stays a result, Appendix A.6).
type toolResult struct {
	Text       string
	Structured any
	IsError    bool
}

// toolNames lists the tools for error messages.
var toolNames = []string{"codex", "codex-reply", "atm_send", "atm_read", "atm_broadcast", "atm_pending_count",
	"agent_sessions", "agent_status", "agent_close", "agent_wait", "agent_interrupt", "agent_respond", "agent_list_codex_sessions"}

// parseToolCall reads a tools/call request.
func (s *Server) parseToolCall(m *jsonrpcframe.Message) (*toolCall, error) {
	// The params are split, not decoded: a reader's message is valid JSON.
	var buf [8]jsonrpcframe.Member
	p, ok := jsonrpcframe.AppendMembers(buf[:0], m.Params)
	name, _ := jsonrpcframe.String(jsonrpcframe.Lookup(p, "name"))
	if !ok || name == "" {
		return nil, newError(ErrInvalidParams, nil, "tools/call needs params {name, arguments}")
	}
	a, err := parseArgs(jsonrpcframe.Lookup(p, "arguments"))
	if err != nil {
		return nil, err
	}
	c := &toolCall{id: m.ID, rawID: m.ID.Raw(), name: name, args: a}
	if meta := jsonrpcframe.Lookup(p, "_meta"); len(meta) > 0 {
		var mbuf [4]jsonrpcframe.Member
		mm, _ := jsonrpcframe.AppendMembers(mbuf[:0], meta)
		if tok := jsonrpcframe.Lookup(mm, "progressToken"); len(tok) > 0 && string(tok) != "null" {
			c.prog = &progress{c: s.client, token: tok}
		}
	}
	return c, nil
}

// startToolCall begins a tools/call from the router without blocking; done
// is called exactly once with the outcome. Replies to a session are queued
// right here, in the order they were read; every other tool runs on a
// goroutine of its own.
func (s *Server) startToolCall(ctx context.Context, c *toolCall, done func(*toolResult, error)) {
	if c.name == "codex-reply" {
		s.startCodexReply(ctx, c, done)
		return
	}
	go func() { done(s.runTool(ctx, c)) }()
}

// runTool runs one tool.
func (s *Server) runTool(ctx context.Context, c *toolCall) (*toolResult, error) {
	switch c.name {
	case "codex":
		return s.toolCodex(ctx, c)
	case "codex-reply":
		return s.toolCodexReply(ctx, c)
	case "atm_send":
		return s.atmTools.toolATMSend(ctx, c)
	case "atm_read":
		return s.atmTools.toolATMRead(ctx, c)
	case "atm_broadcast":
		return s.atmTools.toolATMBroadcast(ctx, c)
	case "atm_pending_count":
		return s.atmTools.toolATMPending(ctx, c)
	case "agent_sessions":
		return s.toolAgentSessions(ctx, c)
	case "agent_status":
		return s.toolAgentStatus(ctx, c)
	case "agent_close":
		return s.toolAgentClose(ctx, c)
	case "agent_wait":
		return s.toolAgentWait(ctx, c)
	case "agent_interrupt":
		return s.toolAgentInterrupt(ctx, c)
	case "agent_respond":
		return s.toolAgentRespond(ctx, c)
	case "agent_list_codex_sessions":
		return s.toolListCodexSessions(ctx, c)
	}
	return nil, newError(ErrInvalidParams, map[string]any{"tool": c.name, "available": toolNames},
		"unknown tool %q (available: %s)", c.name, strings.Join(toolNames, ", "))
}

// finishToolCall answers the client: the result, or the error; nothing when
// the client cancelled the request.
func (s *Server) finishToolCall(ctx context.Context, c *toolCall, res *toolResult, err error) {
	c.prog.finish() // no progress after the response
	if ctx.Err() != nil {
		if c.answer != nil {
			s.client.release()
		}
		s.log.Info("request cancelled by the client; no response sent", "id", c.id.String(), "tool", c.name)
		return
	}
	if c.answer != nil {
		s.client.writeReserved(c.answer)
		return
	}
	if err != nil {
		s.client.replyError(c.id, err)
		return
	}
	s.client.reply(c.id, resultJSON(res))
}

// resultJSON renders a tool result: text content, the isError flag,
// structuredContent; {"content":[{"type":"text","text":…}],"isError":true,
// "structuredContent":{…}}, the bytes encoding/json would write for the
// same map (without HTML escapes, as jsonrpcframe writes). Every turn's
// answer goes through here, so a flat structuredContent (strings, numbers,
// booleans) is written by hand; anything else is encoded by encoding/json.
func resultJSON(r *toolResult) json.RawMessage {
	b := make([]byte, 0, 2*len(r.Text)+256)
	b = append(b, `{"content":[{"text":`...)
	b = jsonrpcframe.AppendString(b, r.Text)
	b = append(b, `,"type":"text"}]`...)
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	if r.Structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = appendValue(b, r.Structured)
	}
	return append(b, '}')
}

// appendValue appends v as JSON: a map of scalars by hand, with its keys
// sorted as encoding/json sorts them; anything else through encoding/json.
func appendValue(b []byte, v any) []byte {
	if m, ok := v.(map[string]any); ok && len(m) <= 16 {
		var keyBuf [16]string
		keys := keyBuf[:0]
		for k, x := range m {
			switch x.(type) {
			case string, bool, int, int64, nil:
			default:
				return appendEncoded(b, v)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonrpcframe.AppendString(b, k)
			b = append(b, ':')
			switch x := m[k].(type) {
			case string:
				b = jsonrpcframe.AppendString(b, x)
			case bool:
				b = strconv.AppendBool(b, x)
			case int:
				b = strconv.AppendInt(b, int64(x), 10)
			case int64:
				b = strconv.AppendInt(b, x, 10)
			case nil:
				b = append(b, "null"...)
			}
		}
		return append(b, '}')
	}
	return appendEncoded(b, v)
}

// appendEncoded appends v encoded by encoding/json, without HTML escapes;
// a value it cannot encode becomes null (tool results are built from
// plain data: it does not happen).
func appendEncoded(b []byte, v any) []byte {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return append(b, "null"...)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// jsonText renders v as indented JSON for a text content block.
func jsonText(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "{}"
	}
	return string(b)
}
