package proxy

import (
	"context"
	"encoding/json"
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
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Name == "" {
		return nil, newError(ErrInvalidParams, nil, "tools/call needs params {name, arguments}")
	}
	a, err := parseArgs(p.Arguments)
	if err != nil {
		return nil, err
	}
	c := &toolCall{id: m.ID, rawID: m.ID.Raw(), name: p.Name, args: a}
	if tok := p.Meta.ProgressToken; len(tok) > 0 && string(tok) != "null" {
		c.prog = &progress{c: s.client, token: tok}
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
		s.log.Info("request cancelled by the client; no response sent", "id", c.id.String(), "tool", c.name)
		return
	}
	if err != nil {
		s.client.replyError(c.id, err)
		return
	}
	s.client.reply(c.id, resultJSON(res))
}

// resultJSON renders a tool result: text content plus structuredContent.
func resultJSON(r *toolResult) map[string]any {
	out := map[string]any{"content": []any{map[string]any{"type": "text", "text": r.Text}}}
	if r.Structured != nil {
		out["structuredContent"] = r.Structured
	}
	if r.IsError {
		out["isError"] = true
	}
	return out
}

// jsonText renders v as indented JSON for a text content block.
func jsonText(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "{}"
	}
	return string(b)
}
