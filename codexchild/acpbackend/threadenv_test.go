package acpbackend

import (
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// TestACPThreadEnv: an ACP thread's Env is its agent process's
// environment, over the backend's own (one process per thread: two
// threads, two environments), in the thread's cwd; a thread reopened in a
// new process (session/load) gets it again.
func TestACPThreadEnv(t *testing.T) {
	e := newACPEnv(t)
	b := e.backend(t, e.config(t, "ATM_BRANCH=from-the-backend"))
	run := func(thread string, p backend.ThreadParams) *backend.Result {
		return acpTurnOK(t, b, backend.TurnRequest{ThreadID: thread, Prompt: "run echo $ATM_WORKTREE $ATM_BRANCH $ATM_PORT_BASE $(pwd)", Params: p})
	}
	pa, pb := e.params(t), e.params(t)
	pa.Env = map[string]string{"ATM_WORKTREE": "/wt/a", "ATM_BRANCH": "atm/a", "ATM_PORT_BASE": "20000"}
	pb.Env = map[string]string{"ATM_WORKTREE": "/wt/b", "ATM_BRANCH": "atm/b", "ATM_PORT_BASE": "20010"}
	ra, rb := run("", pa), run("", pb)
	for _, c := range []struct {
		res  *backend.Result
		want string
	}{{ra, "/wt/a atm/a 20000 " + pa.Cwd}, {rb, "/wt/b atm/b 20010 " + pb.Cwd}} {
		if c.res.Text != c.want {
			t.Errorf("the agent's command printed %q, want %q", c.res.Text, c.want)
		}
	}
	// A new backend (serve restarted) reopens thread a in a new process.
	b2 := e.backend(t, e.config(t))
	res := acpTurnOK(t, b2, backend.TurnRequest{ThreadID: ra.ThreadID, Prompt: "run echo $ATM_WORKTREE $ATM_BRANCH", Params: pa})
	if res.ThreadID != ra.ThreadID || res.Text != "/wt/a atm/a" {
		t.Errorf("reopened: %+v, want thread %s and /wt/a atm/a", res, ra.ThreadID)
	}
}
