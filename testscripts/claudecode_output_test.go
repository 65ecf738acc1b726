//go:build unix

package testscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
)

// TestClaudeCodeStructuredOutput: the real Claude Code CLI 2.1.332,
// headless and offline, asks a Codex agent (mockcodex as app-server) for a
// structured answer through its own tool call: codex with output_schema.
// The schema reaches Codex's turn (turn/start outputSchema), and Claude
// Code takes the result (whose structuredContent it checks against the
// tool's outputSchema, and shows the model) with the parsed answer under
// output. An answer that does not match a schema comes back to the model
// as an error result that says why and gives the answer as it was.
func TestClaudeCodeStructuredOutput(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead", "arch")
	work := filepath.Join(dir, "work")
	claudeHome := filepath.Join(dir, "claude-home")
	for _, d := range []string{work, claudeHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		t.Fatal(err)
	}
	proxyLog := filepath.Join(dir, "proxy.log")
	childLog := filepath.Join(dir, "child.jsonl")
	tag := realacp.Tag(t)
	mcpFile := writeMCPFile(t, dir, proxy,
		[]string{"serve", "--team", "dev", "--identity", "team-lead", "--codex-bin", "mockcodex", "--log-level", "debug", "--log-file", proxyLog},
		map[string]string{"ATM_HOME": atmHome, "HOME": atmHome, "PATH": os.Getenv("PATH"), "GIT_CEILING_DIRECTORIES": dir,
			"MOCKCODEX_VERSION": testedAppVersion, "MOCKCODEX_LOG": childLog, realacp.TagEnv: tag})
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"verdict": map[string]any{"type": "string", "enum": []any{"pass", "fail"}}, "count": map[string]any{"type": "integer"}},
		"required": []any{"verdict", "count"}, "additionalProperties": false}
	var agentID string
	api := startAnthropicMock(t, []mockStep{
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"identity": "arch", "output_schema": schema,
				"prompt": `ANSWER={"verdict": "pass", "count": 3}`}}}
		},
		func(prev []mockResult) []mockBlock {
			for _, r := range prev {
				if id := agentIDRe.FindString(r.Text); id != "" {
					agentID = id
				}
			}
			return []mockBlock{{Tool: "mcp__codex__codex-reply", Input: map[string]any{"agent_id": agentID, "output_schema": schema,
				"prompt": `ANSWER={"verdict": "maybe", "count": 3}`}}}
		},
		func([]mockResult) []mockBlock { return []mockBlock{{Text: "checked"}} },
	})
	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Ask arch for a verdict as JSON, twice.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__codex")
	dump := func() { cp.dump(t, proxyLog) }
	results := streamToolResults(cp.stdout.Bytes())
	if cp.err != nil || len(results) != 2 {
		dump()
		t.Fatalf("claude -p: %v; %d tool results, want 2", cp.err, len(results))
	}
	if r := results[0]; r.IsError || !regexp.MustCompile(`"output":\{"verdict":"pass","count":3\}`).MatchString(r.Text) ||
		!strings.Contains(r.Text, `"output_how":"constrained"`) {
		t.Errorf("the structured answer (error %v):\n%s", r.IsError, clipLog(r.Text, 3000))
	}
	if r := results[1]; !r.IsError || !strings.Contains(r.Text, "The answer does not match the output schema: ") ||
		!strings.Contains(r.Text, "The agent's answer was:") || !strings.Contains(r.Text, `"maybe"`) {
		t.Errorf("the answer that does not match (error %v):\n%s", r.IsError, clipLog(r.Text, 3000))
	}
	if !strings.Contains(cp.stdout.String(), `"result":"checked"`) {
		t.Errorf("Claude Code did not end with the model's answer")
	}
	child, _ := os.ReadFile(childLog)
	if !regexp.MustCompile(`"method":"turn/start".*"outputSchema":\{[^}]*"properties":\{"count"`).Match(child) {
		t.Errorf("Codex's turn/start had no outputSchema:\n%s", clipLog(string(child), 3000))
	}
	if left := realacp.Leftover(tag, 10*time.Second); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
	if t.Failed() {
		dump()
	}
}
