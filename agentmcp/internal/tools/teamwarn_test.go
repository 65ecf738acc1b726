package tools

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

const typo = `team "my-teem" does not exist (no /h/.claude/teams/my-teem/config.json); did you mean my-team?`

// TestTeamWarned: while the team is missing, an agent's start result
// carries the warning in its text and its structured warnings; otherwise
// (the team exists, an error, a task) it is unchanged.
func TestTeamWarned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		problem string
		res     *mcpconn.ToolResult
		err     error
		want    *mcpconn.ToolResult
	}{
		{"missing team", typo, &mcpconn.ToolResult{Text: "MOCK_REPLY: hi\n", Structured: map[string]any{"identity": "arch"}}, nil,
			&mcpconn.ToolResult{Text: "MOCK_REPLY: hi\n\n(warning: team mail will fail: " + typo + ")",
				Structured: map[string]any{"identity": "arch", "warnings": []string{"team mail will fail: " + typo}}}},
		{"the team exists", "", &mcpconn.ToolResult{Text: "ok"}, nil, &mcpconn.ToolResult{Text: "ok"}},
		{"a task", typo, &mcpconn.ToolResult{Task: &mcpconn.Task{}}, nil, &mcpconn.ToolResult{Task: &mcpconn.Task{}}},
		{"an error", typo, nil, errors.New("boom"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Env{cfg: Config{TeamProblem: func() string { return tc.problem }}}
			got, err := e.teamWarned(tc.res, tc.err)
			if err != tc.err {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(mcpconn.Task{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestATMErrorTeamProblem: a team that is not found gets what is wrong
// with the configured team; another team's, or another failure, does not.
func TestATMErrorTeamProblem(t *testing.T) {
	s := &atmTools{team: "my-teem", teamProblem: func() string { return typo }}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"our team", fmt.Errorf("send: %w: %q (no /x)", atmclient.ErrTeamNotFound, "my-teem"),
			`atm_send: send: team not found: "my-teem" (no /x) (` + typo + `)`},
		{"another team", fmt.Errorf("send: %w: %q (no /x)", atmclient.ErrTeamNotFound, "other"),
			`atm_send: send: team not found: "other" (no /x)`},
		{"not a member", fmt.Errorf("send: %w: %q is not in team %q", atmclient.ErrNotMember, "x", "my-teem"),
			`atm_send: send: not a team member: "x" is not in team "my-teem"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.atmError("atm_send", tc.err).Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
