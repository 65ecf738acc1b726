package backend

import "context"

// StructuredOutputter is what a backend offers whose turns can be
// constrained to a JSON Schema: TurnRequest.OutputSchema reaches the
// agent's model (Codex app-server: outputSchema on turn/start, which Codex
// 0.171.0 sends to the model as the response's text.format json_schema,
// strict), so that its final message is JSON of that schema. A backend
// without it (Codex mcp-server: the codex tool has no such argument; an
// ACP agent) refuses a turn with an OutputSchema (ErrUnsupported): a caller
// that wants structured output from it asks for JSON in the prompt and
// checks the answer as it checks every answer (package outputschema).
type StructuredOutputter interface {
	// StructuredOutput returns nil when the backend's turns take an
	// OutputSchema, or an error wrapping ErrUnsupported when this
	// backend's child cannot (Codex's auto backend once it has chosen
	// mcp-server; choosing may run its probe, nothing else).
	StructuredOutput(ctx context.Context) error
}

// Structured asks b whether its turns take an OutputSchema: nil when they
// do, an error wrapping ErrUnsupported when b is no StructuredOutputter or
// its child cannot.
func Structured(ctx context.Context, b any) error {
	s, ok := b.(StructuredOutputter)
	if !ok {
		return ErrUnsupported
	}
	return s.StructuredOutput(ctx)
}
