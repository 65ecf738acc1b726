package agentmcp

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers are the proxy's dependency rules: which of the module's own
// packages each internal package may not depend on, directly or not, and
// which sibling modules it may not import itself. The connection layer knows
// no domain; the domain knows no MCP; nothing below the composition root
// knows it.
var layers = []struct {
	pkg       string
	forbidden []string
}{
	{"internal/proxyerr", []string{"internal/mcpconn", "internal/session", "internal/tools", "internal/proxy", "codexchild", "registry", "atmclient", "mailbridge"}},
	{"internal/workspace", []string{"internal/mcpconn", "internal/session", "internal/tools", "internal/proxy", "codexchild", "registry", "atmclient", "mailbridge"}},
	{"internal/gitctx", []string{"internal/mcpconn", "internal/session", "internal/tools", "internal/proxy", "codexchild", "registry", "atmclient", "mailbridge"}},
	{"internal/ccmsg", []string{"internal/mcpconn", "internal/session", "internal/tools", "internal/proxy", "internal/config", "codexchild", "registry", "atmclient", "mailbridge"}},
	{"internal/mcpconn", []string{"internal/session", "internal/tools", "internal/proxy", "internal/gitctx", "codexchild", "registry", "atmclient", "mailbridge"}},
	{"internal/session", []string{"internal/mcpconn", "internal/tools", "internal/proxy", "internal/workspace", "atmclient", "mailbridge"}},
	// The runner of a host's worktrees: workspace over sshhost, nothing more.
	{"internal/hostrun", []string{"internal/mcpconn", "internal/session", "internal/tools", "internal/proxy", "internal/places", "internal/config", "registry", "atmclient", "mailbridge"}},
	{"internal/places", []string{"internal/mcpconn", "internal/tools", "internal/proxy", "codexchild", "registry", "mailbridge"}},
	{"internal/tools", []string{"internal/proxy", "mailbridge"}},
	// The feed reads sessions and publishes them; it knows nothing of MCP.
	{"internal/feed", []string{"internal/mcpconn", "internal/tools", "internal/proxy", "mailbridge"}},
	// The view reads feeds; it never reaches into a serve's parts.
	{"internal/view", []string{"internal/mcpconn", "internal/tools", "internal/proxy", "mailbridge"}},
}

// TestLayers checks the dependency rules with go list -deps.
func TestLayers(t *testing.T) {
	const mod = "github.com/atm-agent-mcp/atm-agent-mcp/"
	for _, l := range layers {
		t.Run(l.pkg, func(t *testing.T) {
			deps := goList(t, "-deps", "./"+l.pkg)
			imports := goList(t, "-f", "{{join .Imports \"\\n\"}}", "./"+l.pkg)
			for _, f := range l.forbidden {
				switch {
				case strings.HasPrefix(f, "internal/"):
					if name := mod + "agentmcp/" + f; slices.Contains(deps, name) {
						t.Errorf("%s depends on %s", l.pkg, name)
					}
				case slices.Contains(imports, mod+f):
					t.Errorf("%s imports %s", l.pkg, mod+f)
				}
			}
		})
	}
}

// kindLayers are the rules of the seam between the domain and the agent
// kinds (package codexchild/backend): who may depend, directly or not, on
// which kind's package. The domain and what reads it see only the seam,
// never a kind's package; the seam knows no kind; the Codex backends and
// the ACP backend know the seam, never each other.
var kindLayers = []struct {
	pkg       string // an import path under the module root
	forbidden []string
}{
	{"agentmcp/internal/session", []string{"codexchild", "codexchild/acpbackend", "codexchild/acp"}},
	{"agentmcp/internal/tools", []string{"codexchild", "codexchild/acpbackend", "codexchild/acp"}},
	{"agentmcp/internal/feed", []string{"codexchild", "codexchild/acpbackend", "codexchild/acp"}},
	{"agentmcp/internal/view", []string{"codexchild", "codexchild/acpbackend", "codexchild/acp"}},
	{"codexchild/backend", []string{"codexchild", "codexchild/acpbackend", "codexchild/acp"}},
	// The check of an answer against an output schema is the domain's, the
	// same for every kind (a kind that cannot constrain its agent is
	// checked the same way), so it sits under the seam and, like the seam,
	// knows no kind.
	{"codexchild/backend/outputschema", []string{"codexchild", "codexchild/acpbackend", "codexchild/acp"}},
	{"codexchild", []string{"codexchild/acpbackend", "codexchild/acp"}},
	{"codexchild/acpbackend", []string{"codexchild"}},
}

// TestKindLayers checks the seam's rules with go list -deps.
func TestKindLayers(t *testing.T) {
	const mod = "github.com/atm-agent-mcp/atm-agent-mcp/"
	for _, l := range kindLayers {
		t.Run(l.pkg, func(t *testing.T) {
			deps := goList(t, "-deps", mod+l.pkg)
			for _, f := range l.forbidden {
				if slices.Contains(deps, mod+f) {
					t.Errorf("%s depends on %s", l.pkg, mod+f)
				}
			}
		})
	}
}

// goList runs go list with args and returns the words it prints.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestWingImports: no package of this module depends on test support in
// its non-test files: codexchild's test wing (codexchild/testing: the
// mocks and the real agents' installers) and the fake backend the domain's
// tests script (internal/fakebackend); only tests may use them (go list
// -deps leaves test files out).
func TestWingImports(t *testing.T) {
	const mod = "github.com/atm-agent-mcp/atm-agent-mcp/"
	support := []string{mod + "codexchild/testing/", mod + "agentmcp/internal/fakebackend"}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	isSupport := func(p string) bool {
		return slices.ContainsFunc(support, func(s string) bool { return strings.HasPrefix(p, s) })
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list ./... gave %d packages: wrong directory?", len(lines))
	}
	for _, line := range lines {
		words := strings.Fields(line)
		if isSupport(words[0]) {
			continue
		}
		for _, d := range words[1:] {
			if isSupport(d) {
				t.Errorf("%s depends on test support %s", words[0], d)
			}
		}
	}
}
