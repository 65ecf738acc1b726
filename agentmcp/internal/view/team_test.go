package view

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/feed"
)

// standIn is a serve's feed as a view reads it: it writes a record and
// answers on a Unix socket; answers it is sent are answered ok once.
type standIn struct {
	t      *testing.T
	ln     net.Listener
	rec    string
	serve  feed.Serve
	agents []feed.Agent
	mu     sync.Mutex
	conns  []net.Conn
	seen   map[string]bool
}

func startStandIn(t *testing.T, teamDir, instance string, agents ...feed.Agent) *standIn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "f.sock")
	if len(sock) > 100 {
		dir, err := os.MkdirTemp("", "vt")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock = filepath.Join(dir, "f.sock")
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &standIn{t: t, ln: ln, serve: feed.Serve{Instance: instance, Team: "dev", PID: os.Getpid(), Started: time.Now()}, agents: agents, seen: map[string]bool{}}
	s.rec = filepath.Join(teamDir, instance, feed.RecordFile)
	if err := os.MkdirAll(filepath.Dir(s.rec), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(feed.Record{Socket: sock, Serve: s.serve})
	if err := os.WriteFile(s.rec, b, 0o600); err != nil {
		t.Fatal(err)
	}
	go s.accept()
	t.Cleanup(s.exit)
	return s
}

func (s *standIn) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		enc := json.NewEncoder(c)
		enc.Encode(feed.Frame{Type: "hello", Serve: &s.serve})
		enc.Encode(feed.Frame{Type: "snapshot", Agents: s.agents})
		go func() {
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				var fr feed.Frame
				json.Unmarshal(sc.Bytes(), &fr)
				res := feed.Frame{Type: "answered", ID: fr.ID, OK: true}
				s.mu.Lock()
				if s.seen[fr.ApprovalID] {
					res.OK, res.Error = false, "approval "+fr.ApprovalID+" was already answered"
				}
				s.seen[fr.ApprovalID] = true
				s.mu.Unlock()
				enc.Encode(res)
			}
		}()
	}
}

// send writes a frame to every view connected.
func (s *standIn) send(fr feed.Frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		json.NewEncoder(c).Encode(fr)
	}
}

// exit is the serve's end: its record goes, its streams end.
func (s *standIn) exit() {
	os.Remove(s.rec)
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

func waitSnapshot(t *testing.T, tm *Team, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := tm.Snapshot()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 5 s: %+v", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func stateOf(s Snapshot, identity string) string {
	for _, a := range s.Agents {
		if a.Identity == identity {
			return a.State
		}
	}
	return ""
}

// TestTeam: the view's merge of a team's feeds: serves found from their
// records, their agents kept by serve, changes applied, mail kept once,
// an answer routed to the owning serve (a second refused by it), a serve
// that exits has its agents gone, one that starts later is followed.
func TestTeam(t *testing.T) {
	teamDir := t.TempDir()
	a := startStandIn(t, teamDir, "lead-a", feed.Agent{AgentID: "codex-1", Identity: "arch", Kind: "codex", State: feed.StateWorking})
	b := startStandIn(t, teamDir, "lead-b", feed.Agent{AgentID: "mock-1", Identity: "rev", Kind: "mock", State: feed.StateApproval,
		Approvals: []feed.Approval{{ID: "ap-1", Question: "Allow mock to run `make`?"}}})
	// A stale record (a serve killed with SIGKILL): nothing answers.
	os.MkdirAll(filepath.Join(teamDir, "lead-dead"), 0o700)
	os.WriteFile(filepath.Join(teamDir, "lead-dead", feed.RecordFile), []byte(`{"socket":"/nonexistent/f.sock","serve":{"instance":"lead-dead","team":"dev"}}`), 0o600)
	// Another team's serve is left out.
	other := startStandIn(t, teamDir, "lead-other", feed.Agent{AgentID: "x", Identity: "x", State: feed.StateWorking})
	other.serve.Team = "other"
	b2, _ := json.Marshal(feed.Record{Socket: "/nonexistent", Serve: other.serve})
	os.WriteFile(other.rec, b2, 0o600)

	tm := NewTeam(TeamConfig{Dirs: []string{teamDir}, Team: "dev", Rescan: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tm.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-tm.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("not ready within 5 s")
	}
	s := tm.Snapshot()
	if len(s.Agents) != 2 || stateOf(s, "arch") != feed.StateWorking || stateOf(s, "rev") != feed.StateApproval {
		t.Fatalf("agents at start: %+v", s.Agents)
	}
	for _, ag := range s.Agents {
		if want := map[string]string{"arch": "lead-a", "rev": "lead-b"}[ag.Identity]; ag.Serve != want {
			t.Errorf("%s's serve %q, want %q", ag.Identity, ag.Serve, want)
		}
	}

	// A change, and a mail both serves tell of: kept once.
	snap, updates, stop := tm.Subscribe()
	defer stop()
	if len(snap.Agents) != 2 {
		t.Errorf("subscribed snapshot: %+v", snap.Agents)
	}
	a.send(feed.Frame{Type: "agent", Agent: &feed.Agent{AgentID: "codex-1", Identity: "arch", Kind: "codex", State: feed.StateWaitingMail}})
	m := feed.Mail{Key: "rev/k1", From: "arch", To: "rev", Summary: "done"}
	a.send(feed.Frame{Type: "mail", Mail: &m})
	b.send(feed.Frame{Type: "mail", Mail: &m})
	waitSnapshot(t, tm, "arch waiting for mail", func(s Snapshot) bool { return stateOf(s, "arch") == feed.StateWaitingMail && len(s.Mail) == 1 })
	var got []string
	for len(got) < 2 {
		select {
		case u := <-updates:
			got = append(got, u.Type)
		case <-time.After(5 * time.Second):
			t.Fatalf("updates: %v", got)
		}
	}
	if !slices.Contains(got, "agent") || !slices.Contains(got, "mail") {
		t.Errorf("updates %v, want an agent and a mail (the same mail from two serves once)", got)
	}

	// An answer goes to the serve that owns the approval; a second is
	// refused there.
	if err := tm.Answer(context.Background(), "lead-b", "mock-1", "ap-1", "approve", "the view"); err != nil {
		t.Fatalf("answer: %v", err)
	}
	if err := tm.Answer(context.Background(), "lead-b", "mock-1", "ap-1", "approve", "the view"); err == nil {
		t.Error("a second answer was taken")
	}
	if err := tm.Answer(context.Background(), "lead-x", "mock-1", "ap-1", "approve", "the view"); err == nil {
		t.Error("an answer to no serve was taken")
	}

	// lead-b exits: its agent is gone, the other's stays.
	b.exit()
	s = waitSnapshot(t, tm, "rev gone", func(s Snapshot) bool { return stateOf(s, "rev") == feed.StateGone })
	if stateOf(s, "arch") != feed.StateWaitingMail {
		t.Errorf("arch after lead-b exited: %s", stateOf(s, "arch"))
	}
	for _, a := range s.Agents {
		if a.Identity == "rev" && len(a.Approvals) != 0 {
			t.Errorf("a gone agent still has approvals: %+v", a.Approvals)
		}
	}

	// A serve that starts later is followed.
	startStandIn(t, teamDir, "lead-c", feed.Agent{AgentID: "mock-2", Identity: "qa", Kind: "mock", State: feed.StateWorking})
	s = waitSnapshot(t, tm, "qa", func(s Snapshot) bool { return stateOf(s, "qa") == feed.StateWorking })
	live := map[string]bool{}
	for _, sv := range s.Serves {
		live[sv.Instance] = sv.Live
	}
	if !live["lead-a"] || live["lead-b"] || !live["lead-c"] || live["lead-dead"] {
		t.Errorf("serves %+v", s.Serves)
	}
	if _, ok := live["lead-other"]; ok {
		t.Errorf("another team's serve is listed: %+v", s.Serves)
	}
}
