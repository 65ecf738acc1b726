package testscripts

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// TestRealCodex runs the real_*.txtar conversations through the binary
// against the real Codex CLI (pinned versions, installed by make test) and
// the loopback model: per backend, a turn, a reply, a Codex agent's own
// atm_send through its per-thread tool server, an approval bridged to the
// client, the shutdown summary, and two agents committing at once in
// worktrees of their own under workspace-write (real_worktree). Without
// the binaries it skips loudly (fails under ATM_REQUIRE_REAL_CODEX=1).
// sawTogether reports whether one request of the model had both texts in
// its input.
func sawTogether(mock *mockmodel.Server, a, b string) bool {
	for _, r := range mock.Requests() {
		all := strings.Join(r.InputTexts(), "\n")
		if strings.Contains(all, a) && strings.Contains(all, b) {
			return true
		}
	}
	return false
}

// sawSchema reports whether a request of the model constrained its answer
// to a JSON Schema containing substr.
func sawSchema(mock *mockmodel.Server, substr string) bool {
	for _, r := range mock.Requests() {
		if schema, _ := r.OutputSchema(); strings.Contains(string(schema), substr) {
			return true
		}
	}
	return false
}

// slowLadderSummary is the model of the ladder-* identities of
// real_resume: it needs 3 s for a summary, longer than Claude Code leaves
// serve between its SIGINT and its SIGKILL.
func slowLadderSummary(r *mockmodel.Request) mockmodel.Responder {
	if !strings.Contains(r.LastUserText, "Session ending. Write a concise summary") ||
		!strings.Contains(strings.Join(r.InputTexts(), "\n"), "Identity:  ladder-") {
		return nil
	}
	return mockmodel.Slow(3*time.Second, func(s *mockmodel.Stream, _ *mockmodel.Request) error {
		if err := s.Message("MOCK_SUMMARY: too late"); err != nil {
			return err
		}
		return s.Completed()
	})
}

// modelSawCmd is the command of the real_*.txtar scenarios
//
//	model-saw TEXT
//
// which waits until a request of the loopback model had TEXT in its input,
// at most waitLimit. A scenario waits so for a turn that Codex must have:
// Codex puts a turn's prompt into its thread after turn/started, on its way
// to the model, and a turn cut before that (on a loaded machine, tens of
// milliseconds later) ends with nothing of it in the thread.
func modelSawCmd(mock *mockmodel.Server) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: model-saw TEXT")
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit(ts))
		defer cancel()
		for seen := 0; ; {
			reqs, err := mock.WaitRequests(ctx, seen+1)
			if err != nil {
				ts.Fatalf("model-saw: no request of the model had %q in its input: %v", args[0], err)
			}
			for _, r := range reqs[seen:] {
				if strings.Contains(strings.Join(r.InputTexts(), "\n"), args[0]) {
					ts.Logf("model-saw: request %d has %q", r.N, args[0])
					return
				}
			}
			seen = len(reqs)
		}
	}
}

func TestRealCodex(t *testing.T) {
	for _, tc := range []struct {
		which   realcodex.Which
		backend string
	}{
		{realcodex.MCPServer, "mcp-server"},
		{realcodex.AppServer, "app-server"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			bin := realcodex.Bin(t, tc.which)
			mock, err := mockmodel.Start(mockmodel.Config{Handler: slowLadderSummary})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mock.Close() })
			home := realcodex.NewHome(t, mock.URL(), nil)
			p := proxyParams(t, "real_*.txtar")
			p.Cmds["model-wait"] = modelWait(mock)
			p.Cmds["model-count"] = modelCount(mock)
			p.Cmds["model-saw"] = modelSawCmd(mock)
			setup := p.Setup
			p.Setup = func(env *testscript.Env) error { // runs once per script, in parallel
				if err := setup(env); err != nil {
					return err
				}
				var names []string
				for _, kv := range home.Env() {
					k, v, _ := strings.Cut(kv, "=")
					switch k {
					case "CODEX_HOME", "MOCK_API_KEY", "RUST_LOG", realcodex.TagEnv:
						env.Setenv(k, v)
						names = append(names, k)
					}
				}
				env.Setenv("MCP_ENV", strings.Join(append(names, "MOCK_API_KEY", "RUST_LOG", realcodex.TagEnv), " "))
				env.Setenv("CODEX_BIN", bin)
				env.Setenv("CODEX_BIN_DIR", filepath.Dir(bin)) // a host's PATH (real_host)
				env.Setenv("CODEX_BACKEND", tc.backend)
				env.Setenv("CODEX_WORK", home.WorkDir)
				return os.MkdirAll(home.WorkDir, 0o755)
			}
			p.Condition = backendCondition(tc.backend)
			// testscript runs the scripts as parallel subtests: check after them.
			t.Cleanup(func() {
				if !t.Failed() && !mock.SawInput("Identity:  arch") {
					t.Error("the model never saw the injected session context")
				}
				// real_restart: after the restart, the resumed thread's
				// request carries the turn from before the crash.
				if tc.backend == "app-server" && !t.Failed() && !sawTogether(mock, "after-restart: what was the word?", "albatross-before-crash") {
					t.Error("after the restart the model did not see the session's earlier turn")
				}
				// real_host: after the ssh connection was killed and
				// dropped, the thread on the host carries the turn from
				// before each; the context named the host.
				if tc.backend == "app-server" && !t.Failed() {
					for _, q := range [][2]string{{"after-host-kill: what was the word?", "osprey-on-host"}, {"after-host-drop: what was the word?", "osprey-on-host"}} {
						if !sawTogether(mock, q[0], q[1]) {
							t.Errorf("the model never saw %q with the turn from before (%q) on the host's thread", q[0], q[1])
						}
					}
					if !mock.SawInput("Host:      box (you run on this host") {
						t.Error("the model never saw the host in the session context")
					}
				}
				// real_powers: app-server constrained the model to the
				// output schema; on mcp-server the fork's first request told
				// the model the source's answer.
				if tc.backend == "app-server" && !t.Failed() && !sawSchema(mock, `"verdict"`) {
					t.Error("the model never got the output schema as the response's json_schema format")
				}
				if tc.backend == "mcp-server" && !t.Failed() && !sawTogether(mock, "You are a fork of session", "kestrel-source") {
					t.Error("the fork's first turn did not tell the model the source's answer")
				}
				// real_resume: after serve was stopped as Claude Code stops
				// it, each resumed thread carries its earlier turn, the one
				// cut in its first turn included.
				if tc.backend == "app-server" && !t.Failed() {
					if !sawTogether(mock, "after-ladder: what was the word?", "albatross-ladder") {
						t.Error("after the ladder the model did not see the finished session's earlier turn")
					}
					if !sawTogether(mock, "after-ladder: what was the plan about?", "heron-ladder") {
						t.Error("after the ladder the model did not see the cut first turn of the other session")
					}
				}
			})
			testscript.Run(t, p)
		})
	}
}

// modelWait is the scenario command that waits (at most waitLimit) until
// the model has had a request whose last user text holds TEXT: a turn
// that reached Codex and Codex's model request.
//
//	model-wait TEXT
func modelWait(mock *mockmodel.Server) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: model-wait TEXT")
		}
		deadline := time.Now().Add(waitLimit(ts))
		for modelCountOf(mock, args[0]) == 0 {
			if time.Now().After(deadline) {
				ts.Fatalf("model-wait: no request of the model with %q after %s", args[0], waitLimit(ts))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// modelCount is the scenario command that checks how many requests of
// the model had TEXT in their last user text: mail delivered once is one
// turn that asks the model about it.
//
//	model-count TEXT N
func modelCount(mock *mockmodel.Server) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: model-count TEXT N")
		}
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		if got := modelCountOf(mock, args[0]); got != want {
			ts.Fatalf("model-count: %d requests of the model with %q in their last user text, want %d", got, args[0], want)
		}
	}
}

func modelCountOf(mock *mockmodel.Server, text string) int {
	n := 0
	for _, r := range mock.Requests() {
		if strings.Contains(r.LastUserText, text) {
			n++
		}
	}
	return n
}
