package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// toolCall is one tools/call request from the client.
type toolCall struct {
	id   jsonrpcframe.ID
	name string
	args args
	prog *progress
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
	"agent_sessions", "agent_status", "agent_close"}

func (s *Server) toolsCall(ctx context.Context, m *jsonrpcframe.Message) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Name == "" {
		s.client.replyError(m.ID, newError(ErrInvalidParams, nil, "tools/call needs params {name, arguments}"))
		return
	}
	a, err := parseArgs(p.Arguments)
	if err != nil {
		s.client.replyError(m.ID, err)
		return
	}
	c := &toolCall{id: m.ID, name: p.Name, args: a}
	if tok := p.Meta.ProgressToken; len(tok) > 0 && string(tok) != "null" {
		c.prog = &progress{c: s.client, token: tok}
	}
	var res *toolResult
	switch p.Name {
	case "codex":
		res, err = s.toolCodex(ctx, c)
	case "codex-reply":
		res, err = s.toolCodexReply(ctx, c)
	case "atm_send":
		res, err = s.atmTools.toolATMSend(ctx, c)
	case "atm_read":
		res, err = s.atmTools.toolATMRead(ctx, c)
	case "atm_broadcast":
		res, err = s.atmTools.toolATMBroadcast(ctx, c)
	case "atm_pending_count":
		res, err = s.atmTools.toolATMPending(ctx, c)
	case "agent_sessions":
		res, err = s.toolAgentSessions(ctx, c)
	case "agent_status":
		res, err = s.toolAgentStatus(ctx, c)
	case "agent_close":
		res, err = s.toolAgentClose(ctx, c)
	default:
		err = newError(ErrInvalidParams, map[string]any{"tool": p.Name, "available": toolNames},
			"unknown tool %q (available: %s)", p.Name, strings.Join(toolNames, ", "))
	}
	c.prog.finish() // no progress after the response
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		s.log.Info("request cancelled by the client; no response sent", "id", m.ID.String(), "tool", p.Name)
		return
	}
	if err != nil {
		s.client.replyError(m.ID, err)
		return
	}
	s.client.reply(m.ID, resultJSON(res))
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
