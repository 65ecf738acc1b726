package proxy

import (
	"context"
	"encoding/json"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
)

// The handler is an mcpconn.TaskHandler: the tasks extension's methods go
// to the tools, which make codex and codex-reply calls into tasks
// (tools/tasks.go).

func (h handler) GetTask(ctx context.Context, id string) (*mcpconn.Task, error) {
	return h.s.tools.GetTask(ctx, id)
}

func (h handler) UpdateTask(ctx context.Context, id string, responses json.RawMessage) error {
	return h.s.tools.UpdateTask(ctx, id, responses)
}

func (h handler) CancelTask(ctx context.Context, id string) error {
	return h.s.tools.CancelTask(ctx, id)
}

var _ mcpconn.TaskHandler = handler{}
