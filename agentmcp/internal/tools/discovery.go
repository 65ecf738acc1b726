package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/rollout"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// listCodexSessions lists every Codex session on this machine from its
// rollout files, newest first, and whether this proxy has it bound.
func (e *Env) listCodexSessions(_ context.Context, c *mcpconn.ToolCall) (*mcpconn.ToolResult, error) {
	if err := c.Args.CheckUnknown("agent_list_codex_sessions", "cwd", "limit"); err != nil {
		return nil, err
	}
	cwd, err := c.Args.Str("cwd")
	if err != nil {
		return nil, err
	}
	limit, set, err := c.Args.Int("limit")
	if err != nil {
		return nil, err
	}
	switch {
	case !set:
		limit = 50
	case limit < 1:
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "limit"}, "argument \"limit\" must be at least 1")
	}
	if cwd != "" && !filepath.IsAbs(cwd) {
		cwd = filepath.Join(e.cfg.Cwd, cwd) // it need not exist here: rollouts may come from elsewhere
	}
	list, err := rollout.List(e.codexHome(), rollout.Filter{Cwd: cwd, Limit: limit})
	if err != nil {
		return nil, proxyerr.New(proxyerr.ErrInternal, nil, "listing codex sessions: %v", err)
	}
	out := make([]map[string]any, 0, len(list))
	var lines []string
	for _, r := range list {
		v := map[string]any{"thread_id": r.ThreadID, "cwd": r.Cwd, "first_prompt": session.Clip(r.FirstPrompt, 300),
			"timestamp": r.Timestamp.UTC().Format(time.RFC3339), "source": r.Source, "cli_version": r.CLIVersion,
			"path": r.Path, "bound": false}
		if s := e.m.ByThread(r.ThreadID); s != nil && s.Record().Status.Live() {
			v["bound"] = true
			v["agent_id"] = s.Record().AgentID
		}
		out = append(out, v)
		lines = append(lines, fmt.Sprintf("%s  %s  %-6s %s  %q", r.ThreadID, r.Timestamp.UTC().Format(time.RFC3339), r.Source, r.Cwd, session.Clip(r.FirstPrompt, 60)))
	}
	text := fmt.Sprintf("%d codex session(s)", len(out))
	if len(lines) > 0 {
		text += "\n" + strings.Join(lines, "\n")
	}
	return &mcpconn.ToolResult{Text: text, Structured: map[string]any{"sessions": out}}, nil
}

func (e *Env) codexHome() string {
	if e.cfg.CodexHome != "" {
		return e.cfg.CodexHome
	}
	return rollout.Home()
}

// adoptNote is the seed of a fresh thread in place of an adopted Codex
// session: its last messages (a backend that can resume the thread, as
// app-server can, ignores it).
func (e *Env) adoptNote(threadID string) (rollout.Session, string, error) {
	r, err := rollout.Find(e.codexHome(), threadID)
	if err != nil {
		return rollout.Session{}, "", proxyerr.New(proxyerr.ErrSessionNotFound, map[string]any{"thread_id": threadID},
			"no Codex session %s under %s", threadID, e.codexHome())
	}
	msgs, err := rollout.Messages(r.Path, 10)
	if err != nil || len(msgs) == 0 {
		return r, "", nil
	}
	var b strings.Builder
	b.WriteString("[Adopted Codex session " + threadID + " — its last messages]\n")
	for _, m := range msgs {
		b.WriteString(m.Role + ": " + session.Clip(m.Text, 1500) + "\n")
	}
	b.WriteString("[End of adopted session]")
	return r, b.String(), nil
}
