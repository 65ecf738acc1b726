package proxy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccsession"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// claudeRecord writes Claude Code's record of its session process pid, as
// 2.1.332 keeps it in {home}/.claude/sessions/{pid}.json.
func claudeRecord(t *testing.T, home string, pid int, rec map[string]any) {
	t.Helper()
	rec["pid"] = pid
	b, _ := json.Marshal(rec)
	dir := ccsession.Dir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// underClaude configures a serve started by the Claude Code session of
// short id short (process pid, messaging socket socket) in its session
// team, as serve resolves it under an interactive Claude Code with agent
// teams on.
func underClaude(short string, pid int) func(*Options) {
	return func(o *Options) {
		o.Team, o.Identity, o.SessionTeam = "session-"+short, "team-lead", true
		o.RegistryTeam, o.RegistryInstance = "claude-code", "session-"+short
		o.ClaudeSessionID = short + "-68d2-4e09-aa7b-a85d75a652b7"
		o.ClientPID, o.MessagingSocket = pid, "/tmp/cc-socks/"+strconv.Itoa(pid)+".sock"
		o.ParkPoll, o.TakeOverWait = 20*time.Millisecond, 10*time.Second
	}
}

// sessionIn returns the registry record of agentID in instance of the
// Claude Code session teams' registry, as a reader sees it.
func sessionIn(t *testing.T, home, instance, agentID string) (registry.Session, bool) {
	t.Helper()
	d, err := registry.TeamDir(home, "claude-code")
	if err != nil {
		t.Fatal(err)
	}
	insts, err := d.Scan()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		for _, s := range in.Sessions {
			if in.Identity == instance && s.AgentID == agentID {
				return s, true
			}
		}
	}
	return registry.Session{}, false
}

// TestHandOverWhenTheConversationMoves: Claude Code parks the session
// that started serve (its record gets parkedJobId, ← "for agents"): serve
// hands codex1 over to that background session and ends by itself; the
// background session's serve takes codex1 up live: a member of its team,
// its thread continued by codex-reply.
func TestHandOverWhenTheConversationMoves(t *testing.T) {
	home := t.TempDir()
	writeTeam(t, home, "session-aaaaaaaa", "team-lead")
	writeTeam(t, home, "session-bbbbbbbb", "team-lead")
	claudeRecord(t, home, 4001, map[string]any{"sessionId": "aaaaaaaa-68d2-4e09-aa7b-a85d75a652b7", "kind": "interactive",
		"messagingSocketPath": "/tmp/cc-socks/4001.sock"})
	p := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, modify: underClaude("aaaaaaaa", 4001)})
	p.initialize(false)
	first := p.structured(p.tool("codex", map[string]any{"prompt": "work", "identity": "codex1"}))
	agentID, thread := first["agent_id"].(string), first["threadId"].(string)

	claudeRecord(t, home, 4001, map[string]any{"sessionId": "aaaaaaaa-68d2-4e09-aa7b-a85d75a652b7", "kind": "interactive",
		"messagingSocketPath": "/tmp/cc-socks/4001.sock", "parkedJobId": "bbbbbbbb"})
	select {
	case err := <-p.runErr:
		if err != nil {
			t.Errorf("Run after the move: %v", err)
		}
		p.runErr <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("serve still runs 10 s after its conversation moved")
	}
	rec, ok := sessionIn(t, home, "session-aaaaaaaa", agentID)
	if !ok || rec.Status != registry.StatusStale || rec.HandedTo != "bbbbbbbb" || rec.Turns != 1 {
		t.Fatalf("codex1 after the hand-over: %+v (found %v); want stale, handed to bbbbbbbb, 1 turn", rec, ok)
	}
	if teamHasMember(t, home, "session-aaaaaaaa", "codex1") {
		t.Error("codex1 is still a member of the team the conversation left")
	}

	claudeRecord(t, home, 4002, map[string]any{"sessionId": "bbbbbbbb-68d2-4e09-aa7b-a85d75a652b7", "kind": "bg", "jobId": "bbbbbbbb",
		"messagingSocketPath": "/tmp/cc-socks/4002.sock"})
	n := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, modify: underClaude("bbbbbbbb", 4002)})
	n.initialize(false)
	poll.Until(t, "codex1 a member of the background session's team", func() bool { return teamHasMember(t, home, "session-bbbbbbbb", "codex1") })
	res := n.structured(n.tool("codex-reply", map[string]any{"agent_id": agentID, "prompt": "go on"}))
	if res["threadId"] != thread {
		t.Errorf("codex-reply after the move ran on thread %v, want codex1's %s", res["threadId"], thread)
	}
	poll.Until(t, "codex1's second turn recorded", func() bool {
		rec, _ := sessionIn(t, home, "session-bbbbbbbb", agentID)
		return rec.Turns == 2
	})
	if rec, _ := sessionIn(t, home, "session-bbbbbbbb", agentID); rec.HandedTo != "" || !rec.Status.Live() {
		t.Errorf("codex1 in the background session's registry: %+v; want live, no longer handed over", rec)
	}
}

// TestTakeUpWaitsForTheEarlierServe: the background session's serve starts
// while the conversation's earlier serve still holds codex1; it takes
// codex1 up once that one has handed it over and ended.
func TestTakeUpWaitsForTheEarlierServe(t *testing.T) {
	home := t.TempDir()
	writeTeam(t, home, "session-bbbbbbbb", "team-lead")
	// The earlier serve: its registry holds codex1 live.
	earlier, err := registry.Open(registry.Config{Home: home, Team: "claude-code", Identity: "session-aaaaaaaa"})
	if err != nil {
		t.Fatal(err)
	}
	defer earlier.Close()
	codex1, err := earlier.Add(registry.Session{Identity: "codex1", Team: "session-aaaaaaaa", Status: registry.StatusIdle, BackendID: "thread-7", Cwd: home})
	if err != nil {
		t.Fatal(err)
	}
	claudeRecord(t, home, 4001, map[string]any{"sessionId": "aaaaaaaa-68d2-4e09-aa7b-a85d75a652b7", "kind": "interactive", "parkedJobId": "bbbbbbbb"})
	claudeRecord(t, home, 4002, map[string]any{"sessionId": "bbbbbbbb-68d2-4e09-aa7b-a85d75a652b7", "kind": "bg", "jobId": "bbbbbbbb",
		"messagingSocketPath": "/tmp/cc-socks/4002.sock"})
	n := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, modify: underClaude("bbbbbbbb", 4002)})
	n.initialize(false)
	time.Sleep(100 * time.Millisecond) // a few polls while the earlier serve runs
	if n.srv.sessions.ByIdentity("codex1") != nil {
		t.Fatal("codex1 taken up while the earlier serve still runs it")
	}
	// The earlier serve hands codex1 over and ends.
	if _, err := earlier.Update(codex1.AgentID, func(s *registry.Session) {
		s.Status, s.ThreadState, s.HandedTo = registry.StatusStale, registry.ThreadClosed, "bbbbbbbb"
	}); err != nil {
		t.Fatal(err)
	}
	if err := earlier.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "codex1 taken up", func() bool { return n.srv.sessions.ByIdentity("codex1") != nil })
	if rec, ok := sessionIn(t, home, "session-bbbbbbbb", codex1.AgentID); !ok || !rec.Status.Live() || rec.BackendID != "thread-7" {
		t.Errorf("codex1 in the background session's registry: %+v (found %v)", rec, ok)
	}
}

// TestHandedOverSessionsStayForTheirSession: a serve of another Claude
// Code session that starts meanwhile (one of Claude Code's spare background
// sessions) does not take over the sessions handed to the conversation's
// background session, as it takes over those of other ended sessions.
func TestHandedOverSessionsStayForTheirSession(t *testing.T) {
	home := t.TempDir()
	writeTeam(t, home, "session-cccccccc", "team-lead")
	earlier, err := registry.Open(registry.Config{Home: home, Team: "claude-code", Identity: "session-aaaaaaaa"})
	if err != nil {
		t.Fatal(err)
	}
	handed, err := earlier.Add(registry.Session{Identity: "codex1", Team: "session-aaaaaaaa", Status: registry.StatusStale, HandedTo: "bbbbbbbb", Cwd: home})
	if err != nil {
		t.Fatal(err)
	}
	ended, err := earlier.Add(registry.Session{Identity: "codex2", Team: "session-aaaaaaaa", Status: registry.StatusClosed, Cwd: home})
	if err != nil {
		t.Fatal(err)
	}
	earlier.Close()
	spare := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, modify: underClaude("cccccccc", 4003)})
	spare.initialize(false)
	if _, ok := sessionIn(t, home, "session-aaaaaaaa", handed.AgentID); !ok {
		t.Error("the session handed to bbbbbbbb was taken over by cccccccc's serve")
	}
	if _, ok := sessionIn(t, home, "session-cccccccc", ended.AgentID); !ok {
		t.Error("cccccccc's serve did not take over the ended session's other sessions")
	}
}

// teamHasMember reports whether team's config.json under home lists name.
func teamHasMember(t *testing.T, home, team, name string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, ".claude", "teams", team, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Members []struct {
			Name string `json:"name"`
		} `json:"members"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, m := range cfg.Members {
		if m.Name == name {
			return true
		}
	}
	return false
}

// TestHandOverInAConfiguredTeam: without agent teams (a configured team,
// serve's identity team-lead in both sessions), the background session's
// serve opens the same instance registry once the first has handed codex1
// over and ended, and takes it up from there.
func TestHandOverInAConfiguredTeam(t *testing.T) {
	home := t.TempDir()
	configured := func(short string, pid int) func(*Options) {
		return func(o *Options) {
			underClaude(short, pid)(o)
			o.Team, o.Identity, o.SessionTeam = "dev", "team-lead", false
			o.RegistryTeam, o.RegistryInstance = "", ""
		}
	}
	claudeRecord(t, home, 4001, map[string]any{"sessionId": "aaaaaaaa-68d2-4e09-aa7b-a85d75a652b7", "kind": "interactive",
		"messagingSocketPath": "/tmp/cc-socks/4001.sock"})
	p := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, modify: configured("aaaaaaaa", 4001)})
	p.initialize(false)
	first := p.structured(p.tool("codex", map[string]any{"prompt": "work", "identity": "codex1"}))
	claudeRecord(t, home, 4001, map[string]any{"sessionId": "aaaaaaaa-68d2-4e09-aa7b-a85d75a652b7", "kind": "interactive",
		"messagingSocketPath": "/tmp/cc-socks/4001.sock", "parkedJobId": "bbbbbbbb"})
	select {
	case <-p.runErr:
		p.runErr <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("serve still runs 10 s after its conversation moved")
	}
	claudeRecord(t, home, 4002, map[string]any{"sessionId": "bbbbbbbb-68d2-4e09-aa7b-a85d75a652b7", "kind": "bg", "jobId": "bbbbbbbb",
		"messagingSocketPath": "/tmp/cc-socks/4002.sock"})
	n := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, modify: configured("bbbbbbbb", 4002)})
	n.initialize(false)
	poll.Until(t, "codex1 taken up", func() bool { return n.srv.sessions.ByIdentity("codex1") != nil })
	if res := n.structured(n.tool("codex-reply", map[string]any{"agent_id": first["agent_id"], "prompt": "go on"})); res["threadId"] != first["threadId"] {
		t.Errorf("codex-reply after the move ran on thread %v, want %v", res["threadId"], first["threadId"])
	}
}
