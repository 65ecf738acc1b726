package codexchild

import (
	"context"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend/outputschema"
)

var (
	_ backend.StructuredOutputter = (*AppServer)(nil)
	_ backend.StructuredOutputter = (*autoBackend)(nil)
)

// StructuredOutput returns nil: app-server's turn/start takes an
// outputSchema.
func (b *AppServer) StructuredOutput(context.Context) error { return nil }

// StructuredOutput asks the chosen backend; backend.ErrUnsupported on mcp-server.
func (a *autoBackend) StructuredOutput(ctx context.Context) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	s, ok := b.(backend.StructuredOutputter)
	if !ok {
		return fmt.Errorf("codexchild: structured output: %w", backend.ErrUnsupported)
	}
	return s.StructuredOutput(ctx)
}

// refuseOutputSchema is how a backend that cannot constrain its agent's
// answer refuses a turn with an OutputSchema, before anything is sent.
func refuseOutputSchema(req backend.TurnRequest, who string) error {
	if len(req.OutputSchema) == 0 {
		return nil
	}
	return fmt.Errorf("codexchild: %s cannot constrain a turn's answer to an output schema: %w", who, backend.ErrUnsupported)
}

// checkOutputSchema compiles a turn's OutputSchema before it is sent: Codex
// passes any value to the model as it is, and the model's API refuses what
// is no schema only after the turn has started.
func checkOutputSchema(req backend.TurnRequest) error {
	if len(req.OutputSchema) == 0 {
		return nil
	}
	if _, err := outputschema.Compile(req.OutputSchema); err != nil {
		return fmt.Errorf("codexchild: turn: %w", err)
	}
	return nil
}
