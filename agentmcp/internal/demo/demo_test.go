package demo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockcodex"
)

// TestMain runs this test binary as mockcodex when it is started under that
// name (the link TestDemo makes), so the mock is never built at test time.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "mockcodex" {
		os.Exit(mockcodex.Main())
	}
	os.Exit(m.Run())
}

// TestDemo builds the binary, links mockcodex to this test binary and
// plays the demo: the transcript shows both sessions in their own
// worktrees, their commits on their own branches and the project's
// checkout clean, the mail delivered as a turn, dev-1's change reviewed,
// both merged into main (git log --oneline lists their commits above the
// project's first), the summaries and the worktrees kept.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "atm-agent-mcp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/cmd/atm-agent-mcp").CombinedOutput(); err != nil {
		t.Fatalf("build atm-agent-mcp: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	codex := filepath.Join(dir, "mockcodex")
	if err := os.Symlink(self, codex); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(Config{Bin: bin, Codex: codex, Out: &out, Home: t.TempDir()}); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"identity=arch", "identity=dev-1", "branch=atm/arch", "branch=atm/dev-1",
		"atm/arch  -> auth: design", "atm/dev-1 -> auth: token refresh", "main      -> the project", "(clean: the agents never touched",
		"Please add rate limiting to /token.", "<team-mail", "arch/summary.md", "dev-1/summary.md", "proxy exited with code 0", " kept ",
		"-> tools/call agent_diff", "<- dev-1 (", "merged dev-1's work (branch atm/dev-1) into main by squash", "merged arch's work (branch atm/arch) into main by squash",
		"(clean: the merges moved main", "$ git log --oneline main"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, out.String())
		}
	}
	log := regexp.MustCompile(`\n +[0-9a-f]{7,} auth: design \(arch\)\n +[0-9a-f]{7,} auth: token refresh \(dev-1\)\n +[0-9a-f]{7,} the project\n`)
	if !log.MatchString(out.String()) {
		t.Errorf("git log --oneline does not show both agents' work merged above the project's first commit:\n%s", out.String())
	}
}
