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

// TestClaudeCodeMerge: the real Claude Code CLI 2.1.332, headless and
// offline, leads the whole loop of issue 40 through its tool calls: it
// starts a Codex agent (mockcodex) isolated in a worktree of its own,
// which commits a change on its branch; finds agent_diff and agent_merge
// with ToolSearch; reviews the change with agent_diff; and merges it with
// agent_merge and a check. Every tool result is no error, the lead's
// checkout ends on main with the agent's commit (its Agent-Id trailer)
// and nothing uncommitted, and the audit has the merge.
func TestClaudeCodeMerge(t *testing.T) {
	claude := claudeCLI(t, "2.1.332")
	dir := t.TempDir()
	atmHome := filepath.Join(dir, "atm")
	makeTeam(t, atmHome, "team-lead", "dev-1")
	work := filepath.Join(dir, "work")
	repo := filepath.Join(dir, "repo")
	claudeHome := filepath.Join(dir, "claude-home")
	for _, d := range []string{work, repo, claudeHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("config", "user.name", "Lead")
	git("config", "user.email", "lead@example.com")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")

	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		t.Fatal(err)
	}
	proxyLog := filepath.Join(dir, "proxy.log")
	tag := realacp.Tag(t)
	mcpFile := writeMCPFile(t, dir, proxy,
		[]string{"serve", "--team", "dev", "--identity", "team-lead", "--codex-bin", "mockcodex", "--log-level", "debug", "--log-file", proxyLog},
		map[string]string{"ATM_HOME": atmHome, "HOME": atmHome, "PATH": os.Getenv("PATH"),
			"GIT_CEILING_DIRECTORIES": dir, realacp.TagEnv: tag})

	var agentID string
	api := startAnthropicMock(t, []mockStep{
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "ToolSearch", Input: map[string]any{
				"query": "select:mcp__codex__agent_diff,mcp__codex__agent_merge", "max_results": 10}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__codex", Input: map[string]any{"identity": "dev-1", "cwd": repo, "isolation": "worktree",
				"prompt": "RUN_SHELL CMD=echo feature > feature.txt && git add -A && git commit -q -m feature"}}}
		},
		func(prev []mockResult) []mockBlock {
			for _, r := range prev {
				if id := agentIDRe.FindString(r.Text); id != "" {
					agentID = id
				}
			}
			return []mockBlock{{Tool: "mcp__codex__agent_diff", Input: map[string]any{"agent_id": agentID}}}
		},
		func([]mockResult) []mockBlock {
			return []mockBlock{{Tool: "mcp__codex__agent_merge", Input: map[string]any{"agent_id": agentID, "check": "test -f feature.txt",
				"message": "dev-1's feature"}}}
		},
		func([]mockResult) []mockBlock { return []mockBlock{{Text: "merged"}} },
	})
	cp := runClaudeP(t, claude, work, claudeEnv(claudeHome, api.URL()), "Have dev-1 add the feature in its own worktree, review it and merge it.",
		"--mcp-config", mcpFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__codex")
	dump := func() { cp.dump(t, proxyLog) }
	results := streamToolResults(cp.stdout.Bytes())
	if cp.err != nil || len(results) != 4 {
		dump()
		t.Fatalf("claude -p: %v; %d tool results, want 4", cp.err, len(results))
	}
	// Claude Code shows the model the structured content.
	for i, want := range []string{
		``, // ToolSearch found them
		`"branch":"atm/dev-1","path":"[^"]*/repo/\.atm/worktrees/dev-1"`,                                         // codex, isolated
		`"branch":"atm/dev-1".*"files":\[\{"path":"feature.txt","status":"A".*"patch":"[^"]*\+feature`,           // agent_diff
		`"merged":true.*"check":\{"command":"test -f feature.txt","passed":true.*"summary":"merged dev-1's work`, // agent_merge
	} {
		if r := results[i]; r.IsError || !regexp.MustCompile(want).MatchString(r.Text) {
			t.Errorf("tool result %d (error %v) does not match %s:\n%s", i, r.IsError, want, clipLog(r.Text, 3000))
		}
	}
	if !strings.Contains(cp.stdout.String(), `"result":"merged"`) {
		t.Errorf("Claude Code did not end with the model's answer")
	}

	// The lead's checkout: on main, the agent's commit, nothing uncommitted.
	if got := git("status", "--porcelain"); got != "" {
		t.Errorf("the lead's checkout is not clean:\n%s", got)
	}
	if got := git("log", "-1", "--format=%s%n%an <%ae>%n%b", "main"); !regexp.MustCompile(`^dev-1's feature\ndev-1 <dev-1@dev>\n[\s\S]*Agent-Id: ` + agentID).MatchString(got) {
		t.Errorf("main's last commit:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "feature.txt")); err != nil {
		t.Errorf("feature.txt is not in the lead's checkout: %v", err)
	}
	audit, _ := os.ReadFile(filepath.Join(atmHome, ".config", "atm", "agent-sessions", "dev", "audit.jsonl"))
	if !regexp.MustCompile(`"event":"agent_merge","agent_id":"` + agentID + `".*check \\"test -f feature.txt\\"","outcome":"merged into main`).Match(audit) {
		t.Errorf("the audit has no merge of the agent's work:\n%s", clipLog(string(audit), 4000))
	}
	if left := realacp.Leftover(tag, 10*time.Second); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
	if t.Failed() {
		dump()
	}
}
