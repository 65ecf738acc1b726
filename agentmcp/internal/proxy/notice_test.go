package proxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
)

// TestNoticed: the notices go out once, with the first answer that can
// carry them (a result, an error result, a proxy error), in its text and
// its structured content or data; an answer sent already, a task and a
// request for input leave them for the next answer.
func TestNoticed(t *testing.T) {
	notices := []string{"this window runs as \"team-lead-2\""}
	type answer struct {
		res *mcpconn.ToolResult
		err error
	}
	type got struct {
		Text       string
		Structured any
		Err        string
		Data       any
	}
	render := func(a answer) got {
		var g got
		if a.res != nil {
			g.Text, g.Structured = a.res.Text, a.res.Structured
		}
		if a.err != nil {
			g.Err = a.err.Error()
			var pe *proxyerr.Error
			if errors.As(a.err, &pe) {
				g.Data = pe.Data["notices"]
			}
		}
		return g
	}
	type status struct {
		Team string `json:"team"`
	}
	for _, tc := range []struct {
		name  string
		calls []answer
		want  []got
	}{
		{
			name: "a result with a map, then no more",
			calls: []answer{
				{res: &mcpconn.ToolResult{Text: "0 unread\n", Structured: map[string]any{"count": 0}}},
				{res: &mcpconn.ToolResult{Text: "again", Structured: map[string]any{"count": 1}}},
			},
			want: []got{
				{Text: "0 unread\n\n(note: this window runs as \"team-lead-2\")", Structured: map[string]any{"count": 0, "notices": notices}},
				{Text: "again", Structured: map[string]any{"count": 1}},
			},
		},
		{
			name:  "a struct becomes a map",
			calls: []answer{{res: &mcpconn.ToolResult{Text: "status", Structured: status{Team: "dev"}}}},
			want:  []got{{Text: "status\n\n(note: this window runs as \"team-lead-2\")", Structured: map[string]any{"team": "dev", "notices": notices}}},
		},
		{
			name:  "an error result without structured content",
			calls: []answer{{res: &mcpconn.ToolResult{Text: "failed", IsError: true}}},
			want:  []got{{Text: "failed\n\n(note: this window runs as \"team-lead-2\")"}},
		},
		{
			name:  "a proxy error",
			calls: []answer{{err: proxyerr.New(proxyerr.ErrInvalidParams, nil, "bad")}, {err: proxyerr.New(proxyerr.ErrInvalidParams, nil, "bad again")}},
			want: []got{
				{Err: "bad (note: this window runs as \"team-lead-2\")", Data: notices},
				{Err: "bad again"},
			},
		},
		{
			name: "answered already, a task and an input request wait for the next answer",
			calls: []answer{
				{err: mcpconn.ErrAnswered},
				{res: &mcpconn.ToolResult{Task: &mcpconn.Task{}}},
				{res: &mcpconn.ToolResult{Input: &mcpconn.InputRequired{State: "s"}}},
				{res: &mcpconn.ToolResult{Text: "done"}},
			},
			want: []got{
				{Err: mcpconn.ErrAnswered.Error()},
				{},
				{},
				{Text: "done\n\n(note: this window runs as \"team-lead-2\")"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n noticed
			var gots []got
			for _, c := range tc.calls {
				res, err := n.annotate(c.res, c.err, notices)
				gots = append(gots, render(answer{res, err}))
			}
			if diff := cmp.Diff(tc.want, gots); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	var none noticed
	res := &mcpconn.ToolResult{Text: "plain"}
	if got, _ := none.annotate(res, nil, nil); got != res {
		t.Errorf("without notices the result changed: %+v", got)
	}
}

// TestInstructions: the notices end the server's instructions.
func TestInstructions(t *testing.T) {
	if got := instructions(nil); got != tools.Instructions {
		t.Errorf("without notices: %q", got)
	}
	got := instructions([]string{"one", "two"})
	if want := tools.Instructions + "\n\nNote: one\nNote: two"; got != want || !strings.HasPrefix(got, tools.Instructions) {
		t.Errorf("instructions end with %q", got[len(tools.Instructions):])
	}
}
