package testscripts

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// proxyParams are the Params of the proxy scenarios: the CLI's, plus the
// mcp conversation command, a team "dev" and a CODEX_HOME in the work
// directory. mockcodex is on PATH already (see TestMain).
func proxyParams(t *testing.T, glob string) testscript.Params {
	rollouts, err := filepath.Abs(filepath.Join("..", "agentmcp", "internal", "rollout", "testdata", "codexhome", "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	p := params(glob)
	p.Dir = "" // only the files of glob
	p.Cmds["mcp"] = cmdMCP
	p.Cmds["flock"] = cmdFlock
	p.Cmds["killgroup"] = cmdKillGroup
	p.Cmds["waitfile"] = cmdWaitFile
	p.Cmds["ccsock"] = cmdCCSock
	p.Cmds["sshd"] = cmdSSHD
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		env.Setenv("CODEX_HOME", filepath.Join(env.WorkDir, ".codex"))
		env.Setenv("ROLLOUTS", rollouts)
		env.Values["mcp"] = &mcpState{procs: map[string]*mcpProc{}}
		env.Values["flocks"] = map[string]*os.File{}
		return os.MkdirAll(filepath.Join(env.WorkDir, ".codex"), 0o700)
	}
	return p
}

// TestProxy runs the proxy conversations testdata/proxy_*.txtar against
// mockcodex, once per Codex protocol: as codex mcp-server and as codex
// app-server of the tested versions (testedMCPVersion, testedAppVersion;
// the proxy's auto selection picks the backend by the version mockcodex
// reports). Scenarios use the conditions [mcp] and
// [app] where the protocols differ.
func TestProxy(t *testing.T) {
	for _, b := range []struct{ backend, version string }{{"mcp-server", testedMCPVersion}, {"app-server", testedAppVersion}} {
		t.Run(b.backend, func(t *testing.T) {
			t.Parallel() // the two backends' scenarios wait on timeouts, not on the CPU
			p := proxyParams(t, "proxy_*.txtar")
			setup := p.Setup
			p.Setup = func(env *testscript.Env) error {
				if err := setup(env); err != nil {
					return err
				}
				env.Setenv("BACKEND", b.backend)
				env.Setenv("MOCKCODEX_VERSION", b.version)
				return nil
			}
			p.Condition = backendCondition(b.backend)
			testscript.Run(t, p)
		})
	}
}

// backendCondition gives scenarios the conditions [mcp] and [app]: which
// Codex protocol backend runs.
func backendCondition(backend string) func(string) (bool, error) {
	return func(cond string) (bool, error) {
		switch cond {
		case "mcp":
			return backend == "mcp-server", nil
		case "app":
			return backend == "app-server", nil
		}
		return false, fmt.Errorf("unknown condition %q", cond)
	}
}
