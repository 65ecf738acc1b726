package testscripts

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// proxyParams are the Params of the proxy scenarios: the CLI's, plus the
// mcp conversation command, mockcodex on PATH (as "mockcodex"), a team
// "dev" and a CODEX_HOME in the work directory.
func proxyParams(t *testing.T, glob string) testscript.Params {
	mock, err := buildMockcodex()
	if err != nil {
		t.Fatal(err)
	}
	p := params(glob)
	p.Dir = "" // only the files of glob
	p.Cmds["mcp"] = cmdMCP
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		env.Setenv("PATH", mock+string(filepath.ListSeparator)+env.Getenv("PATH"))
		env.Setenv("CODEX_HOME", filepath.Join(env.WorkDir, ".codex"))
		env.Values["mcp"] = &mcpState{procs: map[string]*mcpProc{}}
		return os.MkdirAll(filepath.Join(env.WorkDir, ".codex"), 0o700)
	}
	return p
}

// TestProxy runs the proxy conversations testdata/proxy_*.txtar against
// mockcodex.
func TestProxy(t *testing.T) {
	testscript.Run(t, proxyParams(t, "proxy_*.txtar"))
}
