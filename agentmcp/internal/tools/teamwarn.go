package tools

import (
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
	return warned(res, "team mail will fail: "+problem), nil
}
