package session

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
)

// TestTurnContextCache: a session renders its <session-context> block and
// thread parameters again only when something in them changed: the same
// turn after turn, the new branch after a checkout, the repository gone,
// new settings.
func TestTurnContextCache(t *testing.T) {
	str := func(s string) *string { return &s }
	sc := sessionContext{AgentID: "codex-1", Identity: "arch", Team: "dev", Cwd: "/w/repo",
		Repo: gitctx.Facts{Root: str("/w/repo"), Name: str("widgets"), Branch: str("main")}}
	s := &Session{m: &Manager{cfg: Config{Team: "dev"}}}
	first, params := s.turnContext(sc, nil)
	if want := sc.contextBlock() + "\n"; first != want {
		t.Fatalf("preamble = %q, want %q", first, want)
	}
	if !strings.Contains(params.DeveloperInstructions, sc.contextBlock()) || params.Cwd != "/w/repo" {
		t.Errorf("thread parameters = %+v", params)
	}
	block := s.cache.block
	sc.Repo = gitctx.Facts{Root: str("/w/repo"), Name: str("widgets"), Branch: str("main")} // equal, not the same pointers
	if s.turnContext(sc, nil); unsafe.StringData(s.cache.block) != unsafe.StringData(block) {
		t.Error("the block was rendered again although nothing changed")
	}
	for _, change := range []func(){
		func() { sc.Repo.Branch = str("feature/auth") },
		func() { sc.Cwd = "/w/repo/cmd" },
		func() { sc.Repo = gitctx.Facts{} },
		func() { sc.Identity = "dev-1" },
	} {
		change()
		if got, _ := s.turnContext(sc, nil); got != sc.contextBlock()+"\n" {
			t.Errorf("after a change: preamble %q, want %q", got, sc.contextBlock()+"\n")
		}
	}
	s.mu.Lock()
	s.paramsGen++ // the settings changed
	s.mu.Unlock()
	block = s.cache.block
	if s.turnContext(sc, nil); unsafe.StringData(s.cache.block) == unsafe.StringData(block) {
		t.Error("the block was not rendered again after the settings changed")
	}
}
