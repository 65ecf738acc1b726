package testscripts

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/modelmock"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/realcodex"
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
func sawTogether(mock *modelmock.Server, a, b string) bool {
	for _, r := range mock.Requests() {
		all := strings.Join(r.InputTexts(), "\n")
		if strings.Contains(all, a) && strings.Contains(all, b) {
			return true
		}
	}
	return false
}

// slowLadderSummary is the model of the ladder-* identities of
// real_resume: it needs 3 s for a summary, longer than Claude Code leaves
// serve between its SIGINT and its SIGKILL.
func slowLadderSummary(r *modelmock.Request) modelmock.Responder {
	if !strings.Contains(r.LastUserText, "Session ending. Write a concise summary") ||
		!strings.Contains(strings.Join(r.InputTexts(), "\n"), "Identity:  ladder-") {
		return nil
	}
	return modelmock.Slow(3*time.Second, func(s *modelmock.Stream, _ *modelmock.Request) error {
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
func modelSawCmd(mock *modelmock.Server) func(ts *testscript.TestScript, neg bool, args []string) {
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
			mock, err := modelmock.Start(modelmock.Config{Handler: slowLadderSummary})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mock.Close() })
			home := realcodex.NewHome(t, mock.URL(), nil)
			p := proxyParams(t, "real_*.txtar")
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
