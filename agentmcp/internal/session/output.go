package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend/outputschema"
)

// This file is structured output: a turn asked to answer in a JSON Schema
// (Turn.Output, the tools' output_schema). A backend whose turns take a
// schema (backend.StructuredOutputter: Codex app-server's outputSchema)
// gets it with the turn, and its agent's model is constrained to it; to
// every other kind (Codex mcp-server, ACP agents) the schema is told in
// the prompt, which asks for JSON and nothing else. Either way the answer
// is checked here, the same way for every kind: JSON of the schema (also
// inside a Markdown code fence) is the result's Output; anything else is
// the result's OutputError, the result an error, its text the agent's
// answer as it was. A turn that did not complete (interrupted, failed) is
// not checked.

// outputRequest is what a turn with a schema sends: the schema itself to a
// backend that takes it, else a prompt that asks for it. how is
// "constrained" or "prompted" (TurnResult.OutputHow).
func outputRequest(ctx context.Context, b Backend, schema *outputschema.Schema, prompt string) (raw json.RawMessage, sent, how string) {
	if schema == nil {
		return nil, prompt, ""
	}
	if err := backend.Structured(ctx, b); err == nil {
		return schema.Raw(), prompt, OutputConstrained
	}
	return nil, prompt + "\n\n" + outputInstructions(schema), OutputPrompted
}

// How a turn's answer was brought to its schema (TurnResult.OutputHow).
const (
	// OutputConstrained: the agent's model was constrained to the schema
	// (the backend is a backend.StructuredOutputter).
	OutputConstrained = "constrained"
	// OutputPrompted: the prompt asked for JSON of the schema; the answer
	// was only checked.
	OutputPrompted = "prompted"
)

// outputInstructions asks an agent that cannot be constrained for an
// answer in the schema.
func outputInstructions(schema *outputschema.Schema) string {
	return "<output-schema>\nYour final answer to this turn must be a single JSON value, and nothing else " +
		"(no prose, no code fence), that is valid against this JSON Schema:\n" + string(schema.Raw()) + "\n</output-schema>"
}

// checkOutput checks a completed turn's answer against its schema: the
// JSON value (compacted), or why it does not match.
func checkOutput(schema *outputschema.Schema, res *backend.Result) (json.RawMessage, string) {
	if schema == nil || res.IsError || firstNonEmpty(res.Status, "completed") != "completed" {
		return nil, ""
	}
	out, err := schema.Check(res.Text)
	if err != nil {
		var me *outputschema.MismatchError
		if errors.As(err, &me) {
			return nil, me.Error()
		}
		return nil, err.Error()
	}
	return out, ""
}

// answer is what a turn's result says about its schema.
type answer struct {
	output      json.RawMessage // the answer's JSON, when it matched
	outputError string          // why it did not match
	how         string          // OutputConstrained, OutputPrompted; "" without a schema
}

// structured checks res against t's schema (how it was asked for): a
// result whose answer does not match becomes an error whose text says why
// and gives the answer as it was.
func structured(t Turn, how string, res *backend.Result) (*backend.Result, answer) {
	if t.Output == nil {
		return res, answer{}
	}
	out, why := checkOutput(t.Output, res)
	a := answer{output: out, outputError: why, how: how}
	if why != "" {
		c := *res
		c.IsError = true
		c.Text = strings.ToUpper(why[:1]) + why[1:] + ".\n\nThe agent's answer was:\n" + res.Text
		res = &c
	}
	return res, a
}
