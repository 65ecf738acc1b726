package tools

import (
	"maps"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
)

// teamWarned adds what is wrong with the team (Config.TeamProblem) to the
// result of an agent's start or resume: the agent runs, but its team mail
// (and the lead's) fails until the team exists, which the lead would
// otherwise learn only from the first failed mail. The text gets a
// warning line and a structured result a "warnings" list; an error, a
// task, a request for input or a call answered already pass unchanged.
func (e *Env) teamWarned(res *mcpconn.ToolResult, err error) (*mcpconn.ToolResult, error) {
	if err != nil || res == nil || res.Task != nil || res.Input != nil || e.cfg.TeamProblem == nil {
		return res, err
	}
	problem := e.cfg.TeamProblem()
	if problem == "" {
		return res, err
	}
	w := "team mail will fail: " + problem
	out := *res
	out.Text = strings.TrimRight(res.Text, "\n") + "\n\n(warning: " + w + ")"
	if m, ok := res.Structured.(map[string]any); ok {
		m = maps.Clone(m)
		ws, _ := m["warnings"].([]string)
		m["warnings"] = append(ws[:len(ws):len(ws)], w)
		out.Structured = m
	}
	return &out, nil
}
