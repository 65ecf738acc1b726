package codexchild

import (
	"context"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/outputschema"
)

// StructuredOutputter is what a backend offers whose turns can be
// constrained to a JSON Schema: TurnRequest.OutputSchema reaches the
// agent's model (app-server: outputSchema on turn/start, which Codex
// 0.171.0 sends to the model as the response's text.format json_schema,
// strict), so that its final message is JSON of that schema. A backend
// without it (mcp-server: the codex tool has no such argument; an ACP
// agent) refuses a turn with an OutputSchema (ErrUnsupported): a caller
// that wants structured output from it asks for JSON in the prompt and
// checks the answer as it checks every answer (package outputschema).
type StructuredOutputter interface {
	// StructuredOutput returns nil when the backend's turns take an
	// OutputSchema, or an error wrapping ErrUnsupported when this
	// backend's child cannot (the auto backend once it has chosen
	// mcp-server; choosing may run its probe, nothing else).
	StructuredOutput(ctx context.Context) error
}

var (
	_ StructuredOutputter = (*AppServer)(nil)
	_ StructuredOutputter = (*autoBackend)(nil)
)

// StructuredOutput returns nil: app-server's turn/start takes an
// outputSchema.
func (b *AppServer) StructuredOutput(context.Context) error { return nil }

// StructuredOutput asks the chosen backend; ErrUnsupported on mcp-server.
func (a *autoBackend) StructuredOutput(ctx context.Context) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	s, ok := b.(StructuredOutputter)
	if !ok {
		return fmt.Errorf("codexchild: structured output: %w", ErrUnsupported)
	}
	return s.StructuredOutput(ctx)
}

// refuseOutputSchema is how a backend that cannot constrain its agent's
// answer refuses a turn with an OutputSchema, before anything is sent.
func refuseOutputSchema(req TurnRequest, who string) error {
	if len(req.OutputSchema) == 0 {
		return nil
	}
	return fmt.Errorf("codexchild: %s cannot constrain a turn's answer to an output schema: %w", who, ErrUnsupported)
}

// checkOutputSchema compiles a turn's OutputSchema before it is sent: Codex
// passes any value to the model as it is, and the model's API refuses what
// is no schema only after the turn has started.
func checkOutputSchema(req TurnRequest) error {
	if len(req.OutputSchema) == 0 {
		return nil
	}
	if _, err := outputschema.Compile(req.OutputSchema); err != nil {
		return fmt.Errorf("codexchild: turn: %w", err)
	}
	return nil
}
