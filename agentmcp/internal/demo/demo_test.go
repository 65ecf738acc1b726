package demo

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemo builds the binary and mockcodex and plays the demo: the
// transcript shows both sessions, the mail delivered as a turn and the
// summaries.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{
		{"atm-agent-mcp", "github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/cmd/atm-agent-mcp"},
		{"mockcodex", "github.com/atm-agent-mcp/atm-agent-mcp/codexchild/cmd/mockcodex"},
	} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.out, err, out)
		}
	}
	var out bytes.Buffer
	start := time.Now()
	err := Run(Config{Bin: filepath.Join(dir, "atm-agent-mcp"), Codex: filepath.Join(dir, "mockcodex"), Out: &out, Home: t.TempDir()})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the demo took %s, more than 30 s", d)
	}
	for _, want := range []string{"identity=arch", "identity=dev-1", "Please add rate limiting to /token.", "<team-mail", "arch/summary.md", "dev-1/summary.md", "proxy exited with code 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, out.String())
		}
	}
}
