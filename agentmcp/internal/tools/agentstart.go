package tools

import (
	"context"
	"slices"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// agentStartArgNames are the arguments of agent_start: the codex tool's
// that make sense for every agent kind, and agent.
var agentStartArgNames = []string{"agent", "prompt", "agent_file", "agent_id", "identity", "role", "tag", "auto_mail", "cwd", "host", "isolation", "base",
	"model", "base-instructions", "developer-instructions", "background", "output_schema"}

// agentReplyArgNames are the arguments of agent_reply.
var agentReplyArgNames = []string{"agent_id", "prompt", "cwd", "background", "budget_tokens", "team_budget_tokens", "steer", "output_schema"}

// kindOnlyArgs are the codex tool's arguments that agent_start does not
// take, in the codex tool's order: the settings some kind takes of its own
// (the sessions' catalogue asks the kinds' backends: Codex's sandbox,
// approval policy, …), and the adoption of a Codex session (thread_id).
func (e *Env) kindOnlyArgs() []string {
	own := e.m.Catalogue().Settings()
	var out []string
	for _, name := range codexArgNames {
		if slices.Contains(own, name) || name == "thread_id" {
			out = append(out, name)
		}
	}
	return out
}

// agentStart starts a session of any agent kind (issue 33), or resumes one
// by agent_id: the default kind (Codex, whose tool codex is) when the call
// names none, another kind on that kind's backend with the same identity,
// context, mail, approvals and background paths (start, run).
func (e *Env) agentStart(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	a := c.Args
	kind, err := a.Str("agent")
	if err != nil {
		return nil, err
	}
	kind = firstNonEmpty(kind, e.m.Catalogue().Default())
	for _, name := range e.kindOnlyArgs() {
		if a.Has(name) {
			return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": name, "agent": kind},
				"%s is a Codex-only setting, which agent_start does not take: start a Codex agent with it through the codex tool", name)
		}
	}
	if err := a.CheckUnknown("agent_start", agentStartArgNames...); err != nil {
		return nil, err
	}
	host, err := e.hostArg(a, kind)
	if err != nil {
		return nil, err
	}
	if !a.Has("agent_id") && e.cfg.AgentCheck != nil && host == "" {
		// On a host the kind's program is the host's (its backend there
		// is checked by the session manager; doctor checks the host).
		if err := e.cfg.AgentCheck(kind); err != nil {
			return nil, err // not configured, switched off or not installed
		}
	}
	return e.teamWarned(e.start(ctx, c, kind))
}

// agentReply continues a session of any kind by agent_id, as codex-reply
// does, on the goroutine reading the client (read order).
func (e *Env) agentReply(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_reply", agentReplyArgNames...); err != nil {
		return nil, err
	}
	return e.reply(ctx, c, "agent_reply")
}

// sameKind checks that agent_start's agent (when the call gives one) names
// the kind of the session it resumes.
func sameKind(c *mcpconn.ToolCall, s *session.Session, kind string) error {
	if !c.Args.Has("agent") {
		return nil
	}
	have := s.Record().Kind()
	if have == kind {
		return nil
	}
	rec := s.Record()
	return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "agent", "agent": kind, "session_agent": have},
		"session %s (%s) runs agent %q, not %q: resume it without agent, or start a new session", rec.AgentID, rec.Identity, have, kind)
}

// replyTool is the tool that continues a session of kind ("" is the
// default kind): codex-reply for the default kind's (Codex's tools are
// named after it), agent_reply for the others.
func (e *Env) replyTool(kind string) string {
	if kind == "" || kind == e.m.Catalogue().Default() {
		return "codex-reply"
	}
	return "agent_reply"
}

// startTools are the tools that start a session's first turn (a failed
// one keeps no session); turnTools are those whose call runs a turn.
var (
	startTools = []string{"codex", "agent_start"}
	turnTools  = []string{"codex", "codex-reply", "agent_start", "agent_reply", "agent_fork"}
)

// isTurnTool reports whether the tool name runs a turn (multi round-trip
// retries, MCP tasks).
func isTurnTool(name string) bool { return slices.Contains(turnTools, name) }

// EndsTurn reports whether the result of the tool name may carry the end
// of an agent's turn to the client, of any agent kind: the tools that run
// a turn, and agent_wait. The proxy sends the lead's mail from that turn
// ahead of such a result.
func EndsTurn(name string) bool { return isTurnTool(name) || name == "agent_wait" }
