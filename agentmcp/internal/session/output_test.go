package session

import (
	"context"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend/outputschema"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// constrainingBackend is the fake backend as a StructuredOutputter.
type constrainingBackend struct{ *fakebackend.Backend }

func (constrainingBackend) StructuredOutput(context.Context) error { return nil }

// TestOutputSchema: a backend that constrains its agent gets the schema
// with the turn and the prompt as it was; one that cannot gets the schema
// told in the prompt. Either way the answer is checked: JSON of the
// schema is the result's Output, other text an error result that says why
// and gives the answer.
func TestOutputSchema(t *testing.T) {
	schema, err := outputschema.Compile([]byte(`{"type":"object","required":["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		how    string
		answer string
		output string // "" for a mismatch
	}{
		{OutputConstrained, `{"n": 1}`, `{"n":1}`},
		{OutputConstrained, `{"m": 1}`, ""},
		{OutputPrompted, "```json\n{\"n\": 2}\n```", `{"n":2}`},
		{OutputPrompted, "two", ""},
	} {
		t.Run(tt.how+" "+tt.answer, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				if tt.how == OutputConstrained {
					c.Backends = map[string]Backend{registry.DefaultKind: constrainingBackend{c.Backends[registry.DefaultKind].(*fakebackend.Backend)}}
				}
			})
			s := h.create("arch")
			go func() { h.fb.Answer(tt.answer) }()
			r, err := s.Run(context.Background(), Turn{Prompt: "BLOCK", Source: SourceClaude, Output: schema})
			if err != nil {
				t.Fatal(err)
			}
			req := h.fb.Requests()[0]
			if constrained := string(req.OutputSchema) == string(schema.Raw()); constrained != (tt.how == OutputConstrained) ||
				strings.Contains(req.Prompt, "<output-schema>") == constrained {
				t.Errorf("the turn sent schema %s and prompt %q; want it %s", req.OutputSchema, req.Prompt, tt.how)
			}
			switch {
			case r.OutputHow != tt.how:
				t.Errorf("OutputHow = %q, want %q", r.OutputHow, tt.how)
			case tt.output != "" && (string(r.Output) != tt.output || r.IsError || r.OutputError != ""):
				t.Errorf("result %+v, want output %s", r, tt.output)
			case tt.output == "" && (r.Output != nil || !r.IsError || r.OutputError == "" || !strings.HasSuffix(r.Text, "The agent's answer was:\n"+tt.answer)):
				t.Errorf("result %+v, want a mismatch with the answer", r)
			}
			if d := s.Detail(0); d.LastResult == nil || string(d.LastResult.Output) != tt.output {
				t.Errorf("agent_status's last_result = %+v, want output %q", d.LastResult, tt.output)
			}
		})
	}
}
