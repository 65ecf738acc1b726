package testscripts

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockacp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockcodex"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
)

// TestMain registers the programs the scenarios run as testscript
// commands, so that nothing is built for the tests: the test binary
// re-executes itself as "atm-agent-mcp" (agentmcp.Main, exactly what
// cmd/atm-agent-mcp runs), as "mockcodex" (the mock Codex CLI) and as
// "mockmodel" (the mock Responses and Messages APIs) and "mockacp" (the mock ACP agent),
// the Main of packages mockcodex, mockmodel and mockacp, exactly what their
// commands in codexchild/testing/cmd run.
// testscript.Main installs them in a directory on PATH for the whole test
// run, so scenarios, the programs they start (atm-agent-mcp serve
// --codex-bin mockcodex) and the tests themselves (exec.LookPath) find them
// by name. Scenarios must call them with exec (Params.RequireExplicitExec).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"atm-agent-mcp": func() {
			os.Exit(agentmcp.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
		},
		"mockcodex": func() { os.Exit(mockcodex.Main()) },
		"mockmodel": func() { os.Exit(mockmodel.Main()) },
		"mockacp":   func() { os.Exit(mockacp.Main()) },
	})
}

// The tested Codex versions (the Makefile's pins, which the real-Codex
// tests install), which mockcodex reports where a test names a protocol.
const (
	testedMCPVersion = codexchild.TestedMCPServerCodex
	testedAppVersion = codexchild.TestedAppServerCodex
)

// params returns the strict Params shared by every scenario of dir
// matching glob: explicit exec, unique archive names, ATM_HOME and HOME set
// to the work directory, CODEX_TESTED_MCP and CODEX_TESTED_APP to the tested
// Codex versions, git's search for a repository (and the proxy's)
// kept inside it — the machine's temporary directory may itself lie in a
// git work tree — and the helper commands below.
func params(glob string) testscript.Params {
	return testscript.Params{
		Files:               mustGlob(filepath.Join("testdata", glob)),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("ATM_HOME", env.WorkDir)
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(env.WorkDir))
			// The tested Codex versions (mockcodex reports them by default).
			env.Setenv("CODEX_TESTED_MCP", testedMCPVersion)
			env.Setenv("CODEX_TESTED_APP", testedAppVersion)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jsonrpc-lines": cmdJSONRPCLines,
			"json":          cmdJSON,
			"exits":         cmdExits,
		},
	}
}

// mustGlob returns the files matching pattern; none is an error, so that
// a renamed folder cannot silently run nothing.
func mustGlob(pattern string) []string {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("no scenarios match %s (%v)", pattern, err))
	}
	return files
}

// cmdJSONRPCLines checks that every line of a file ("stdout" for the last
// command's output) is one JSON-RPC 2.0 message: an object with
// "jsonrpc":"2.0" and a method, or an id with a result or an error. With a
// count argument the file must hold exactly that many messages.
//
//	jsonrpc-lines stdout [count]
func cmdJSONRPCLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! jsonrpc-lines")
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: jsonrpc-lines file [count]")
	}
	text := ts.ReadFile(args[0])
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	for i, line := range lines {
		var msg map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			ts.Fatalf("%s line %d is not a JSON object: %v\n%s", args[0], i+1, err, line)
		}
		if string(msg["jsonrpc"]) != `"2.0"` {
			ts.Fatalf("%s line %d has no \"jsonrpc\":\"2.0\": %s", args[0], i+1, line)
		}
		_, method := msg["method"]
		_, id := msg["id"]
		_, result := msg["result"]
		_, rpcErr := msg["error"]
		if !method && !(id && (result || rpcErr)) {
			ts.Fatalf("%s line %d is neither a request, a notification nor a response: %s", args[0], i+1, line)
		}
	}
	if len(args) == 2 {
		want, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("jsonrpc-lines: bad count %q", args[1])
		}
		if len(lines) != want {
			ts.Fatalf("%s holds %d messages, want %d", args[0], len(lines), want)
		}
	}
}

// cmdJSON checks one value of a JSON document ("stdout" for the last
// command's output). The path is dot-separated object keys and array
// indexes; the value is compared as text for strings and as compact JSON
// otherwise (null, true, 42, ["a"]).
//
//	json stdout values.model o3
//	json stdout sources.model.kind flag
//	json stdout 0.agent_id codex:abc
//	! json stdout values.model o4
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: json file path value")
	}
	var doc any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &doc); err != nil {
		ts.Fatalf("%s is not JSON: %v", args[0], err)
	}
	v, err := jsonAt(doc, args[1])
	if err != nil {
		if neg {
			return
		}
		ts.Fatalf("%s: %v", args[0], err)
	}
	var got string
	if s, ok := v.(string); ok {
		got = s
	} else {
		b, _ := json.Marshal(v)
		got = string(b)
	}
	switch {
	case !neg && got != args[2]:
		ts.Fatalf("%s %s = %s, want %s", args[0], args[1], got, args[2])
	case neg && got == args[2]:
		ts.Fatalf("%s %s = %s, want anything else", args[0], args[1], got)
	}
}

// jsonAt walks a dot-separated path.
func jsonAt(v any, path string) (any, error) {
	for _, p := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[p]
			if !ok {
				return nil, fmt.Errorf("no key %q in path %s", p, path)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("no index %q (length %d) in path %s", p, len(t), path)
			}
			v = t[i]
		default:
			return nil, fmt.Errorf("%q is not inside an object or array in path %s", p, path)
		}
	}
	return v, nil
}

// cmdExits runs a program like exec and checks its exit code exactly
// (exec and ! exec only tell zero from non-zero). stdout and stderr are
// kept for the next commands.
//
//	exits 2 atm-agent-mcp config --sandbox open
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits code program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}
