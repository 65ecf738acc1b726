package proxy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
)

// gitRepo makes a repository with one commit in dir/repo (real git).
func gitRepo(t *testing.T, dir string) string {
	t.Helper()
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "base"}} {
		gitIn(t, repo, args...)
	}
	return repo
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestHandOverIsolated: an isolated agent follows the conversation to the
// background session (←): the serve that hands it over lets go of its
// worktree (unlocked, with the agent's uncommitted edit), and the serve
// that takes it up re-enters that same worktree: locked again, the next
// turn's cwd and environment in it.
func TestHandOverIsolated(t *testing.T) {
	home := t.TempDir()
	repo := gitRepo(t, home)
	writeTeam(t, home, "session-aaaaaaaa", "team-lead")
	writeTeam(t, home, "session-bbbbbbbb", "team-lead")
	claudeRecord(t, home, 4001, map[string]any{"sessionId": "aaaaaaaa-68d2-4e09-aa7b-a85d75a652b7", "kind": "interactive",
		"messagingSocketPath": "/tmp/cc-socks/4001.sock"})
	p := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, modify: underClaude("aaaaaaaa", 4001)})
	p.initialize(false)
	first := p.structured(p.tool("codex", map[string]any{"prompt": "work", "identity": "codex1", "cwd": repo, "isolation": "worktree"}))
	agentID := first["agent_id"].(string)
	wt := filepath.Join(repo, ".atm", "worktrees", "codex1")
	if w, _ := first["worktree"].(map[string]any); w == nil || w["path"] != wt {
		t.Fatalf("the start's worktree: %v, want %s", first["worktree"], wt)
	}
	if err := os.WriteFile(filepath.Join(wt, "edit.txt"), []byte("unsaved work\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	claudeRecord(t, home, 4001, map[string]any{"sessionId": "aaaaaaaa-68d2-4e09-aa7b-a85d75a652b7", "kind": "interactive",
		"messagingSocketPath": "/tmp/cc-socks/4001.sock", "parkedJobId": "bbbbbbbb"})
	if err := <-p.runErr; err != nil {
		t.Errorf("Run after the move: %v", err)
	}
	p.runErr <- nil
	if list := gitIn(t, repo, "worktree", "list", "--porcelain"); strings.Contains(list, "locked") {
		t.Errorf("the handed-over worktree is still locked:\n%s", list)
	}
	if rec, _ := sessionIn(t, home, "session-aaaaaaaa", agentID); rec.Worktree == nil || rec.Worktree.Path != wt || rec.HandedTo != "bbbbbbbb" {
		t.Fatalf("codex1 handed over: %+v", rec)
	}

	claudeRecord(t, home, 4002, map[string]any{"sessionId": "bbbbbbbb-68d2-4e09-aa7b-a85d75a652b7", "kind": "bg", "jobId": "bbbbbbbb",
		"messagingSocketPath": "/tmp/cc-socks/4002.sock"})
	n := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, modify: underClaude("bbbbbbbb", 4002)})
	n.initialize(false)
	poll.Until(t, "codex1 taken up", func() bool { return n.srv.sessions.ByIdentity("codex1") != nil })
	res := n.structured(n.tool("codex-reply", map[string]any{"agent_id": agentID, "prompt": "go on"}))
	if w, _ := res["worktree"].(map[string]any); w == nil || w["path"] != wt || w["resumed"] != true {
		t.Errorf("after the take-up the worktree is %v, want %s re-entered", res["worktree"], wt)
	}
	reqs := n.fb.Requests()
	last := reqs[len(reqs)-1].Params
	if last.Cwd != wt || last.Env["ATM_WORKTREE"] != wt || last.Env["ATM_BRANCH"] != "atm/codex1" {
		t.Errorf("the turn after the take-up: cwd %q env %v", last.Cwd, last.Env)
	}
	if list := gitIn(t, repo, "worktree", "list", "--porcelain"); !strings.Contains(list, "locked atm-agent-mcp agent="+agentID) {
		t.Errorf("the taken-up worktree is not locked again:\n%s", list)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "edit.txt")); err != nil || string(b) != "unsaved work\n" {
		t.Errorf("the uncommitted edit: %q, %v", b, err)
	}
	if rec, _ := sessionIn(t, home, "session-bbbbbbbb", agentID); rec.Worktree == nil || rec.Worktree.Path != wt || !rec.Status.Live() {
		t.Errorf("codex1 in the background session's registry: %+v", rec)
	}
}
