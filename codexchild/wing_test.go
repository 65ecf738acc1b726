package codexchild

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wing is the import path of the test wing: the doubles and real-agent
// helpers under codexchild/testing, which only tests may use.
const wing = "github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/"

// TestWingImports: no package of this module outside the wing depends on
// it, directly or not, in its non-test files (go list's Deps leave test
// files out); so what ships never carries a mock.
func TestWingImports(t *testing.T) {
	for _, p := range wingUsers(t, "./...") {
		t.Errorf("%s depends on the test wing: %s", p[0], p[1])
	}
}

// wingUsers lists, for the packages pattern matches outside the wing, each
// (package, wing package) pair of a production dependency on the wing.
func wingUsers(t *testing.T, pattern string) [][2]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", pattern).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	return wingDeps(string(out))
}

// wingDeps reads go list's lines "<package> <dep> <dep>…" and returns each
// (package, wing package) pair whose package is outside the wing.
func wingDeps(list string) [][2]string {
	var users [][2]string
	for line := range strings.Lines(list) {
		words := strings.Fields(line)
		if len(words) == 0 || strings.HasPrefix(words[0]+"/", wing) {
			continue
		}
		for _, d := range words[1:] {
			if strings.HasPrefix(d, wing) {
				users = append(users, [2]string{words[0], d})
			}
		}
	}
	return users
}

// TestWingDeps: a production package's dependency on the wing is found,
// the wing's own packages (its commands depend on its libraries) and
// names that only begin like it are not.
func TestWingDeps(t *testing.T) {
	const mod = "github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	list := strings.Join([]string{
		mod + " fmt " + mod + "/backend",
		mod + "/acpbackend " + mod + "/testing/mockacp " + mod + "/backend",
		mod + "/testing/cmd/mockcodex " + mod + "/testing/mockcodex",
		mod + "/testing " + mod + "/testing/sshtest",
		mod + "/testingx " + mod + "/testingx/y",
		"",
	}, "\n")
	got := wingDeps(list)
	want := [][2]string{{mod + "/acpbackend", mod + "/testing/mockacp"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wingDeps (-want +got):\n%s", diff)
	}
}
