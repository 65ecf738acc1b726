package codexchild

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend/outputschema"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

const testOutputSchema = `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`

// contractStructuredOutput: app-server takes an output schema with a turn,
// and the final message is the model's JSON, which passes the schema; a
// schema that is none is refused before anything is sent. mcp-server
// cannot constrain an answer and refuses the turn (ErrUnsupported).
func contractStructuredOutput(t *testing.T, b backend.Backend, e *contractEnv) {
	req := backend.TurnRequest{Prompt: `ANSWER={"answer": "42"}`, Params: backend.ThreadParams{Cwd: e.cwd}, OutputSchema: json.RawMessage(testOutputSchema)}
	if e.kind == KindMCPServer {
		if _, ok := b.(backend.StructuredOutputter); ok {
			t.Errorf("%T is a StructuredOutputter; mcp-server cannot constrain an answer", b)
		}
		if res, err := b.Turn(ctxFor(t, 10*time.Second), req); !errors.Is(err, backend.ErrUnsupported) {
			t.Errorf("Turn with an output schema = %+v, %v; want ErrUnsupported", res, err)
		}
		if s := b.Status(); s.Started {
			t.Errorf("Status = %+v: the refused turn started the child", s)
		}
		return
	}
	if err := b.(backend.StructuredOutputter).StructuredOutput(ctxFor(t, 10*time.Second)); err != nil {
		t.Errorf("StructuredOutput = %v", err)
	}
	bad := req
	bad.OutputSchema = json.RawMessage(`{"type":"bogus"}`)
	if res, err := b.Turn(ctxFor(t, 10*time.Second), bad); !errors.Is(err, outputschema.ErrInvalidSchema) {
		t.Errorf("Turn with an invalid schema = %+v, %v; want ErrInvalidSchema", res, err)
	}
	if s := b.Status(); s.Started {
		t.Errorf("Status = %+v: the refused turn started the child", s)
	}
	res, err := b.Turn(ctxFor(t, 60*time.Second), req)
	if err != nil || res.IsError {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	s, err := outputschema.Compile(req.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Check(res.Text)
	if err != nil || string(out) != `{"answer":"42"}` {
		t.Errorf("the answer %q checked = %s, %v; want {\"answer\":\"42\"}", res.Text, out, err)
	}
}

// TestRealStructuredOutputReachesModel: the real Codex (the pinned
// app-server) passes a turn's outputSchema to the model as the request's
// text.format json_schema, the schema as given; a turn without one has
// none.
func TestRealStructuredOutputReachesModel(t *testing.T) {
	cfg, cwd, mock := setupRealAppModel(t)
	b := newAppBackend(t, cfg)
	res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: `ANSWER={"answer": "yes"}`, Params: backend.ThreadParams{Cwd: cwd},
		OutputSchema: json.RawMessage(testOutputSchema)})
	if err != nil || res.IsError || res.Text != `{"answer": "yes"}` {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	res, err = b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "free text"})
	if err != nil || res.IsError {
		t.Fatalf("second Turn = %+v, %v", res, err)
	}
	type seen struct {
		Schema any
		Name   string
	}
	var got []seen
	for _, r := range mock.Requests() {
		raw, name := r.OutputSchema()
		var v any
		if raw != nil {
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, seen{v, name})
	}
	var schema any
	if err := json.Unmarshal([]byte(testOutputSchema), &schema); err != nil {
		t.Fatal(err)
	}
	want := []seen{{schema, "codex_output_schema"}, {nil, ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output schemas the model saw, per request (-want +got):\n%s", diff)
	}
}

// setupRealAppModel is setupRealApp with the model mock it runs on.
func setupRealAppModel(t *testing.T) (Config, string, *mockmodel.Server) {
	bin := realcodex.Bin(t, realcodex.AppServer)
	mock, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	home := realcodex.NewHome(t, mock.URL(), nil)
	return Config{Bin: bin, Dir: home.WorkDir, Env: home.Env(), ReplaceEnv: true, Kind: KindAppServer}, home.WorkDir, mock
}
