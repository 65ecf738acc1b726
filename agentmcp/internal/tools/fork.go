package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// agentForkArgNames are the arguments of agent_fork.
var agentForkArgNames = []string{"agent_id", "identity", "prompt", "isolation", "base", "background", "output_schema"}

// agentFork starts a new session (its own agent_id and identity) from the
// history of a live one (session.Manager.Fork): the agent's own fork of
// the source's thread where its backend can, else a new session told the
// source's summary or recent messages; the result says which
// (forked_from.how). With a prompt, the fork's first turn runs at once
// (as codex does, in the background too); without, the fork waits idle for
// codex-reply or agent_reply.
func (e *Env) agentFork(ctx context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	a := c.Args
	if err := a.CheckUnknown("agent_fork", agentForkArgNames...); err != nil {
		return nil, err
	}
	src, err := e.lookup(a)
	if err != nil {
		return nil, err
	}
	str, err := a.Strs("identity", "prompt", "isolation", "base")
	if err != nil {
		return nil, err
	}
	background, _, err := a.Bool("background")
	if err != nil {
		return nil, err
	}
	schema, err := outputSchemaArg(a)
	if err != nil {
		return nil, err
	}
	identity := str["identity"]
	if identity == "" {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "identity"},
			"argument \"identity\" is required: the fork is a member of the team of its own")
	}
	if err := atmclient.ValidateName("identity", identity); err != nil {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "identity"}, "%v", err)
	}
	srcRec := src.Record()
	isolated := str["isolation"] == session.IsolationWorktree || str["isolation"] == "" && srcRec.Worktree != nil
	if str["base"] != "" && !isolated {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "base", "isolation": firstNonEmpty(str["isolation"], session.IsolationNone)},
			"base is where an isolated fork's branch starts: give it with isolation \"worktree\"")
	}
	req := session.ForkRequest{Source: src, Identity: identity, Isolation: str["isolation"], Base: str["base"], Tell: forkTell}
	if !isolated && e.cfg.Places != nil {
		req.StartHead = e.cfg.Places.Head(ctx, srcRec.Host, srcRec.Cwd)
	}
	f, err := e.m.Fork(ctx, req)
	if err != nil {
		return nil, err
	}
	rec := f.Record()
	from := rec.ForkedFrom
	note := fmt.Sprintf("forked %s (%s) from %s (%s): %s", rec.AgentID, rec.Identity, srcRec.AgentID, srcRec.Identity, forkHow(from.How))
	var res *mcpconn.ToolResult
	if strings.TrimSpace(str["prompt"]) == "" {
		text := note + "; it waits for its first prompt (" + e.replyTool(rec.Kind()) + ")."
		res = &mcpconn.ToolResult{Text: text, Structured: map[string]any{
			"agent_id": rec.AgentID, "threadId": rec.BackendID, "identity": rec.Identity, "content": text, "status": "idle",
		}}
	} else {
		res, err = e.run(ctx, c, f, session.Turn{Prompt: str["prompt"], Source: session.SourceClaude, Output: schema}, background, false)
		if err != nil {
			return nil, err
		}
		if res != nil && res.Task == nil && res.Input == nil {
			res.Text = "[" + note + "]\n\n" + res.Text
		}
	}
	if m, ok := res.Structured.(map[string]any); ok {
		m["forked_from"] = from
	}
	return warned(withWorktree(res, f), e.sharedCheckout(f)), nil
}

// forkHow says in words how a fork got its source's history.
func forkHow(how string) string {
	switch how {
	case registry.ForkThread:
		return "its agent forked the source's thread, with all of its history"
	case registry.ForkSummary:
		return "its agent cannot fork a thread, so its first turn is told the source's saved summary"
	}
	return "its agent cannot fork a thread, so its first turn is told the source's recent messages and last result"
}

// forkTell is what a fork whose agent cannot fork the source's thread is
// told of it (session.ForkRequest.Tell): its saved summary, else its
// recent agent messages and its last result (the session resources'
// texts).
func forkTell(src *session.Session) (text, how string) {
	rec := src.Record()
	if summary, err := src.Summary(); err == nil && strings.TrimSpace(summary) != "" {
		return session.ForkNote(rec, "its saved summary", summary), registry.ForkSummary
	}
	var b strings.Builder
	b.WriteString(transcriptText(src))
	c := src.Content()
	last := c.Result
	if c.LastResult == nil || c.LastResult.Error != "" {
		last = rec.LastResult // the registry's, from an earlier serve
	}
	if strings.TrimSpace(last) != "" {
		b.WriteString("\n## Its last result\n\n" + strings.TrimSpace(last) + "\n")
	}
	return session.ForkNote(rec, "its recent messages and its last result", capText(b.String())), registry.ForkTranscript
}
