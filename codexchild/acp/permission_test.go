package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// The permission options the agents offered when they were run offline
// against loopback model mocks (Claude, Gemini, Copilot).
var agentOptions = map[string][]acp.PermissionOption{
	"claude": {
		{OptionID: "allow-once", Name: "Allow", Kind: "allow_once"},
		{OptionID: "allow-with-updates", Name: "Always allow", Kind: "allow_always"},
		{OptionID: "reject", Name: "Reject", Kind: "reject_once"},
	},
	"gemini": {
		{OptionID: "proceed_always_server", Name: "Always allow server", Kind: "allow_always"},
		{OptionID: "proceed_always_tool", Name: "Always allow tool", Kind: "allow_always"},
		{OptionID: "proceed_once", Name: "Allow once", Kind: "allow_once"},
		{OptionID: "cancel", Name: "No", Kind: "reject_once"},
	},
	"copilot": {
		{OptionID: "allow_once", Name: "Allow", Kind: "allow_once"},
		{OptionID: "allow_always", Name: "Always", Kind: "allow_always"},
		{OptionID: "reject_once", Name: "Reject", Kind: "reject_once"},
	},
	"allow-always-only": {
		{OptionID: "yes-forever", Name: "Always", Kind: "allow_always"},
		{OptionID: "no", Name: "No", Kind: "reject_once"},
	},
}

// TestPermission answers permission requests of agents with different
// option ids: the option is chosen by kind. An allow is never widened:
// allow_once without such an option is a rejection.
func TestPermission(t *testing.T) {
	tests := []struct {
		agent    string
		decision acp.Decision
		want     string // what the agent says it got
	}{
		{"claude", acp.AllowOnce, "selected allow-once"},
		{"claude", acp.RejectOnce, "selected reject"},
		{"claude", acp.AllowAlways, "selected allow-with-updates"},
		{"claude", acp.RejectAlways, "selected reject"},
		{"claude", acp.Cancelled, "cancelled"},
		{"gemini", acp.AllowOnce, "selected proceed_once"},
		{"gemini", acp.RejectOnce, "selected cancel"},
		{"gemini", acp.AllowAlways, "selected proceed_always_server"},
		{"copilot", acp.AllowOnce, "selected allow_once"},
		{"copilot", acp.RejectAlways, "selected reject_once"},
		{"allow-always-only", acp.AllowOnce, "selected no"},
		{"allow-always-only", acp.AllowAlways, "selected yes-forever"},
	}
	byAgent := map[string][]int{}
	for i, tc := range tests {
		byAgent[tc.agent] = append(byAgent[tc.agent], i)
	}
	for agent, cases := range byAgent {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			opts, _ := json.Marshal(agentOptions[agent])
			cfg := fakeConfig(t, "FAKEACP_OPTIONS="+string(opts))
			var decision acp.Decision
			var asked []acp.PermissionRequest
			cfg.Asker = acp.AskerFunc(func(ctx context.Context, req acp.PermissionRequest) acp.Decision {
				asked = append(asked, req)
				return decision
			})
			c := start(t, cfg)
			s := newSession(t, c, acp.SessionParams{Mode: "default"})
			for _, i := range cases {
				tc := tests[i]
				decision = tc.decision
				res := prompt(t, s, "ask t1")
				if res.Text != tc.want {
					t.Errorf("%s %s: agent got %q, want %q", agent, tc.decision, res.Text, tc.want)
				}
			}
			if len(asked) != len(cases) {
				t.Fatalf("asked %d times, want %d", len(asked), len(cases))
			}
			want := acp.ToolCall{ID: "t1", Title: "run t1", Kind: "execute", Status: "pending"}
			if diff := cmp.Diff(want, asked[0].Tool); diff != "" {
				t.Errorf("tool of the request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(agentOptions[agent], asked[0].Options); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if asked[0].SessionID != s.ID() || asked[0].Turn != 1 {
				t.Errorf("request session %q turn %d, want %q turn 1", asked[0].SessionID, asked[0].Turn, s.ID())
			}
		})
	}
}

// TestPermissionMode: without the mode that asks, the fake agent (as
// claude-agent-acp in "auto") approves by itself; without an Asker every
// request is rejected.
func TestPermissionMode(t *testing.T) {
	t.Parallel()
	opts, _ := json.Marshal(agentOptions["claude"])
	c := start(t, fakeConfig(t, "FAKEACP_OPTIONS="+string(opts)))
	auto := newSession(t, c, acp.SessionParams{})
	if got, want := prompt(t, auto, "ask t1").Text, "ran t1 without asking"; got != want {
		t.Errorf("mode auto: %q, want %q", got, want)
	}
	asking := newSession(t, c, acp.SessionParams{Mode: "default"})
	if got, want := asking.Modes().CurrentModeID, "default"; got != want {
		t.Errorf("current mode %q, want %q", got, want)
	}
	if got, want := prompt(t, asking, "ask t1").Text, "selected reject"; got != want {
		t.Errorf("no Asker: %q, want %q", got, want)
	}
	_, err := c.NewSession(t.Context(), acp.SessionParams{Cwd: t.TempDir(), Mode: "yolo"})
	if !errors.Is(err, acp.ErrUnsupported) {
		t.Errorf("unknown mode: err %v, want ErrUnsupported", err)
	}
}

// TestAwaitingApproval: while the Asker decides, the agent and the session
// are awaiting approval, and OnEvent saw the request.
func TestAwaitingApproval(t *testing.T) {
	t.Parallel()
	opts, _ := json.Marshal(agentOptions["gemini"])
	cfg := fakeConfig(t, "FAKEACP_OPTIONS="+string(opts))
	asked := make(chan struct{})
	answer := make(chan acp.Decision)
	cfg.Asker = acp.AskerFunc(func(ctx context.Context, req acp.PermissionRequest) acp.Decision {
		close(asked)
		return <-answer
	})
	log := &eventLog{}
	cfg.OnEvent = log.add
	c := start(t, cfg)
	s := newSession(t, c, acp.SessionParams{Mode: "default"})
	done := make(chan *acp.TurnResult)
	go func() {
		res, _ := s.Prompt(context.Background(), acp.TurnRequest{Text: "ask t9"})
		done <- res
	}()
	<-asked
	if got := c.Status().State; got != acp.StateAwaitingApproval {
		t.Errorf("client state %q, want %q", got, acp.StateAwaitingApproval)
	}
	if got := s.State(); got != acp.StateAwaitingApproval {
		t.Errorf("session state %q, want %q", got, acp.StateAwaitingApproval)
	}
	answer <- acp.AllowOnce
	res := <-done
	if res == nil || res.Text != "selected proceed_once" {
		t.Fatalf("result %+v, want selected proceed_once", res)
	}
	if got := c.Status().State; got != acp.StateIdle {
		t.Errorf("state after the turn %q, want idle", got)
	}
	c.Close(t.Context())
	var kinds []acp.EventKind
	var decided acp.Decision
	for _, ev := range log.evs {
		if ev.Kind == acp.EventPermission || ev.Kind == acp.EventPermissionDone {
			kinds = append(kinds, ev.Kind)
			decided = ev.Decision
		}
	}
	if diff := cmp.Diff([]acp.EventKind{acp.EventPermission, acp.EventPermissionDone}, kinds); diff != "" || decided != acp.AllowOnce {
		t.Errorf("permission events (-want +got):\n%s decision %q", diff, decided)
	}
}
