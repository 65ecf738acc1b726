package tools

import (
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend/outputschema"
)

// outputSchemaArg reads output_schema (codex, codex-reply, agent_start,
// agent_reply, agent_fork): a JSON Schema the turn's answer must follow,
// compiled before anything runs. nil when absent; a schema that cannot be
// checked against is INVALID_PARAMS (-32602) saying why.
func outputSchemaArg(a mcpconn.Args) (*outputschema.Schema, error) {
	raw, ok := a["output_schema"]
	if !ok {
		return nil, nil
	}
	s, err := outputschema.Compile(raw)
	if err != nil {
		why := strings.TrimPrefix(err.Error(), outputschema.ErrInvalidSchema.Error()+": ")
		return nil, proxyerr.Wrap(proxyerr.ErrInvalidParams, err, map[string]any{"argument": "output_schema", "reason": why},
			"argument \"output_schema\" is not a JSON Schema answers can be checked against: %s", why)
	}
	return s, nil
}

// withOutput puts a structured answer into a turn's tool result: output,
// the answer's JSON (what a client reads instead of the text), and how it
// was asked for; or output_error, why the answer did not match (the
// result is an error then, its text the answer as it was).
func withOutput(r *mcpconn.ToolResult, t *session.TurnResult) {
	m, ok := r.Structured.(map[string]any)
	if !ok || t.OutputHow == "" {
		return
	}
	m["output_how"] = t.OutputHow
	if t.Output != nil {
		m["output"] = t.Output
	}
	if t.OutputError != "" {
		m["output_error"] = t.OutputError
	}
}

// steerSchemaError refuses a reply that asks to be steered into the
// running turn with an output schema: that turn was not asked for one.
func steerSchemaError() error {
	return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"arguments": []string{"steer", "output_schema"}},
		"steer adds the prompt to the running turn, which was not asked for an output schema: give output_schema without steer (the reply then waits for a turn of its own)")
}
