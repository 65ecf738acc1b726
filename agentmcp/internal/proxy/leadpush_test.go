package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/mailbridge"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// ccSocket plays Claude Code's messaging socket: it records every line of
// every connection, and with a gate (listenCCGate) passes each message
// line through it as Claude Code does when it reads the line.
type ccSocket struct {
	path  string
	ln    net.Listener
	lines chan map[string]any
	gate  *claudeGate // optional
	wg    sync.WaitGroup
}

func listenCC(t testing.TB, path string) *ccSocket { return listenCCGate(t, path, nil) }

// listenCCGate is listenCC with Claude Code's gate for peer messages
// (claudeGate; nil: none).
func listenCCGate(t testing.TB, path string, gate *claudeGate) *ccSocket {
	t.Helper()
	s := &ccSocket{path: path, lines: make(chan map[string]any, 1024), gate: gate}
	var err error
	if s.ln, err = net.Listen("unix", path); err != nil {
		t.Fatal(err)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					var m map[string]any
					json.Unmarshal(sc.Bytes(), &m)
					if msg, ok := m["message"].(map[string]any); ok && s.gate != nil {
						from, _ := m["from"].(string)
						content, _ := msg["content"].(string)
						s.gate.admit(ccmsg.Message{From: from, Content: content}, time.Now())
					}
					s.lines <- m
				}
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *ccSocket) close() {
	s.ln.Close()
	s.wg.Wait()
}

// next returns the next line, failing after 10 s.
func (s *ccSocket) next(t testing.TB) map[string]any {
	t.Helper()
	select {
	case m := <-s.lines:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no line on the messaging socket")
		return nil
	}
}

// socketPath returns a short socket path (Unix sockets have a length limit).
func socketPath(t testing.TB) string {
	dir, err := os.MkdirTemp("", "cc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "cc.sock")
}

// leadOpts makes the harness's proxy the lead of team dev with a
// messaging socket.
func leadOpts(sock string) func(*Options) {
	return func(o *Options) {
		o.Identity, o.DefaultIdentity = "team-lead", "codex"
		o.LeadPush, o.MessagingSocket, o.MessagingToken = true, sock, "tok"
		o.MailPollInterval = 50 * time.Millisecond
	}
}

// inbox returns the lead's inbox as read (including read messages).
func inbox(t testing.TB, home, identity string) []atmclient.Message {
	t.Helper()
	atm, err := atmclient.New(atmclient.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	res, err := atm.Read(context.Background(), "dev", identity, atmclient.ReadOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Messages
}

func send(t testing.TB, home, from, to, text, summary string) {
	t.Helper()
	atm, err := atmclient.New(atmclient.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atm.Send(context.Background(), atmclient.SendRequest{From: from, Team: "dev", To: to, Text: text, Summary: summary}); err != nil {
		t.Fatal(err)
	}
}

func leadStatus(c *testConn) map[string]any {
	st := c.structured(c.tool("agent_status", map[string]any{}))
	lm, _ := st["lead_mail"].(map[string]any)
	return lm
}

// TestLeadPush: mail to the lead's identity reaches the messaging socket
// once (auth line, then the sender and text in the content), and the inbox
// entry is marked read; agent_status says the path and counts it.
func TestLeadPush(t *testing.T) {
	sock := listenCC(t, socketPath(t))
	c := startProxy(t, harnessOpts{modify: leadOpts(sock.path)})
	c.initialize(false)
	send(t, c.home, "arch", "team-lead", "the plan is ready", "plan")

	if got, want := sock.next(t), map[string]any{"type": "auth", "token": "tok"}; !cmp.Equal(got, want) {
		t.Errorf("first line %v, want %v", got, want)
	}
	line := sock.next(t)
	msg, _ := line["message"].(map[string]any)
	if line["type"] != "user" || msg["role"] != "user" || msg["content"] != ccmsg.Envelope("arch", "arch", "(plan) the plan is ready") || line["from"] != "arch" {
		t.Errorf("pushed line %v", line)
	}
	poll.Until(t, "the pushed message marked read", func() bool {
		ms := inbox(t, c.home, "team-lead")
		return len(ms) == 1 && ms[0].Read
	})
	select {
	case extra := <-sock.lines:
		t.Errorf("a second line: %v", extra)
	case <-time.After(300 * time.Millisecond):
	}
	lm := leadStatus(c)
	if lm["path"] != "socket" || lm["pushed"] != float64(1) || lm["failures"] != float64(0) || lm["socket"] != sock.path {
		t.Errorf("lead_mail = %v", lm)
	}
}

// TestLeadPushGated: a burst of 40 mails from one agent, and the same
// text three times, reach a messaging socket that drops lines as Claude
// Code 2.1.332's gate does (claudeGate: 30 a sender at once, then one
// every 2 s; a repeat within 30 s): every message is in a line the gate
// took, in order, none is dropped, and all are marked read. Without the
// pacing, 10 of the 40 would be dropped (TestClaudeCodePeerGate measures
// that with the real Claude Code).
func TestLeadPushGated(t *testing.T) {
	gate := newClaudeGate()
	sock := listenCCGate(t, socketPath(t), gate)
	c := startProxy(t, harnessOpts{modify: leadOpts(sock.path)})
	c.initialize(false)
	var want []string
	for i := range 40 {
		text := fmt.Sprintf("step %02d done", i)
		send(t, c.home, "arch", "team-lead", text, "")
		want = append(want, "arch: "+text)
	}
	for range 3 {
		send(t, c.home, "dev-1", "team-lead", "all tests pass", "")
		want = append(want, "dev-1: all tests pass")
	}
	taken := func() []string {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		var out []string
		for _, l := range gate.taken {
			for _, b := range splitMerged(l.Content) {
				out = append(out, l.From+": "+b)
			}
		}
		return out
	}
	poll.Until(t, "every mail taken by the gate, and marked read", func() bool {
		if len(taken()) < len(want) {
			return false
		}
		for _, m := range inbox(t, c.home, "team-lead") {
			if !m.Read {
				return false
			}
		}
		return true
	})
	got := taken()
	bySender := func(a, b string) int { return strings.Compare(a[:strings.Index(a, ":")], b[:strings.Index(b, ":")]) }
	slices.SortStableFunc(got, bySender)
	slices.SortStableFunc(want, bySender)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages the gate took (-sent +taken):\n%s", diff)
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if len(gate.dropped) > 0 {
		t.Errorf("the gate dropped %d lines:\n%s", len(gate.dropped), strings.Join(gate.dropped, "\n"))
	}
}

// TestLeadPushRefused: while nobody listens on the socket the mail stays
// unread (counted as failures, one warning); once the socket listens, the
// next check pushes it.
func TestLeadPushRefused(t *testing.T) {
	path := socketPath(t)
	c := startProxy(t, harnessOpts{modify: leadOpts(path)})
	c.initialize(false)
	send(t, c.home, "arch", "team-lead", "are you there?", "")
	poll.Until(t, "a failed push", func() bool {
		lm := leadStatus(c)
		return lm["failures"].(float64) >= 2
	})
	lm := leadStatus(c)
	if lm["pushed"] != float64(0) || lm["last_error"] == "" || !strings.Contains(lm["reason"].(string), "failed") {
		t.Errorf("lead_mail after refused pushes = %v", lm)
	}
	if ms := inbox(t, c.home, "team-lead"); len(ms) != 1 || ms[0].Read {
		t.Fatalf("inbox after refused pushes: %+v, want one unread", ms)
	}
	sock := listenCC(t, path)
	sock.next(t) // auth
	if line := sock.next(t); line["message"].(map[string]any)["content"] != ccmsg.Envelope("arch", "arch", "are you there?") {
		t.Errorf("pushed line %v", line)
	}
	poll.Until(t, "the pushed message marked read", func() bool {
		ms := inbox(t, c.home, "team-lead")
		return len(ms) == 1 && ms[0].Read
	})
}

// TestLeadPushBacksOff: a socket that refuses is tried again after a
// growing wait, not at every mail check (the poll here is 50 ms, so
// without the back-off two seconds would bring about 40 attempts). The
// bound holds on any machine: a slower one only tries less often.
func TestLeadPushBacksOff(t *testing.T) {
	c := startProxy(t, harnessOpts{modify: leadOpts(socketPath(t))})
	c.initialize(false)
	send(t, c.home, "arch", "team-lead", "are you there?", "")
	poll.Until(t, "a failed push", func() bool { return leadStatus(c)["failures"].(float64) >= 1 })
	time.Sleep(2 * time.Second)
	// Attempts at about 0, 1 and 3 s: at most two within the first 2 s.
	if got := leadStatus(c)["failures"].(float64); got > 2 {
		t.Errorf("failures after 2 s of a refusing socket = %v, want at most 2 (back-off from %v)", got, minRetry)
	}
}

// TestLeadPushLeavesMailToClaudeCode: while the team lists a teammate
// Claude Code runs itself (an in-process one, with its tmuxPaneId), the
// lead reads its inbox on its own, so mail for it is not pushed as well
// (it would show twice); agent_status says why. Once that teammate is
// gone from the team, the waiting mail is pushed.
func TestLeadPushLeavesMailToClaudeCode(t *testing.T) {
	sock := listenCC(t, socketPath(t))
	c := startProxy(t, harnessOpts{modify: leadOpts(sock.path)})
	c.initialize(false)
	cfgPath := filepath.Join(c.home, ".claude", "teams", "dev", "config.json")
	plain, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(plain, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["members"] = append(cfg["members"].([]any), map[string]any{"agentId": "helper@dev", "name": "helper",
		"agentType": "general-purpose", "tmuxPaneId": "in-process", "backendType": "in-process"})
	withMate, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, withMate, 0o644); err != nil {
		t.Fatal(err)
	}
	send(t, c.home, "arch", "team-lead", "left to Claude Code", "")
	poll.Until(t, "agent_status naming Claude Code's own teammate", func() bool {
		reason, _ := leadStatus(c)["reason"].(string)
		return strings.Contains(reason, "helper")
	})
	if lm := leadStatus(c); lm["path"] != "inbox" || lm["pushed"] != float64(0) {
		t.Errorf("lead_mail with Claude Code's teammate in the team = %v", lm)
	}
	if ms := inbox(t, c.home, "team-lead"); len(ms) != 1 || ms[0].Read {
		t.Fatalf("inbox = %+v, want the message unread for Claude Code's reader", ms)
	}
	select {
	case line := <-sock.lines:
		t.Fatalf("pushed while Claude Code reads the inbox itself: %v", line)
	case <-time.After(300 * time.Millisecond):
	}
	if err := os.WriteFile(cfgPath, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	sock.next(t) // auth
	if line := sock.next(t); line["message"].(map[string]any)["content"] != ccmsg.Envelope("arch", "arch", "left to Claude Code") {
		t.Errorf("pushed line %v", line)
	}
}

// TestLeadMailPaths: without a socket, with lead_push off, or when the
// lead's identity is also Codex's default, mail for the lead stays in the
// inbox, and agent_status says why.
func TestLeadMailPaths(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Options)
		reason string
	}{
		{"no socket", func(o *Options) { leadOpts("")(o) }, "no messaging socket"},
		{"push off", func(o *Options) { leadOpts("/nonexistent.sock")(o); o.LeadPush = false }, "lead_push is off"},
		{"default identity", func(o *Options) { leadOpts("/nonexistent.sock")(o); o.DefaultIdentity = "team-lead" }, "team-lead is also default_identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startProxy(t, harnessOpts{modify: tc.modify})
			c.initialize(false)
			send(t, c.home, "arch", "team-lead", "stay", "")
			time.Sleep(200 * time.Millisecond) // four polls
			lm := leadStatus(c)
			if lm["path"] != "inbox" || !strings.Contains(lm["reason"].(string), tc.reason) {
				t.Errorf("lead_mail = %v, want inbox because %s", lm, tc.reason)
			}
			if ms := inbox(t, c.home, "team-lead"); len(ms) != 1 || ms[0].Read {
				t.Errorf("inbox: %+v, want one unread", ms)
			}
		})
	}
}

// members returns the names in dev's config.json and the raw entry of
// name.
func members(t testing.TB, home string) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, ".claude", "teams", "dev", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Members []map[string]any `json:"members"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, m := range cfg.Members {
		out[m["name"].(string)] = m
	}
	return out
}

func names(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestTeamMembership: a Codex identity that the team does not list joins
// config.json while its session is live and leaves when it closes; a
// listed one is left alone; a vanished team does not stop sessions.
func TestTeamMembership(t *testing.T) {
	c := startProxy(t, harnessOpts{modify: func(o *Options) { o.Identity, o.DefaultIdentity = "team-lead", "codex" }})
	c.initialize(false)
	before := names(members(t, c.home))
	res := c.structured(c.tool("codex", map[string]any{"prompt": "hi", "identity": "codex1"}))
	c.structured(c.tool("codex", map[string]any{"prompt": "hi", "identity": "arch"}))
	ms := members(t, c.home)
	m := ms["codex1"]
	if m == nil || m["agentId"] != "codex1@dev" || m["agentType"] != "codex" || m["backendType"] != "atm-agent-mcp" || m["cwd"] != c.home {
		t.Fatalf("codex1 in config.json: %v", m)
	}
	if _, ok := m["joinedAt"].(float64); !ok {
		t.Errorf("joinedAt %v, want a number", m["joinedAt"])
	}
	c.tool("agent_close", map[string]any{"agent_id": res["agent_id"]})
	c.tool("agent_close", map[string]any{"identity": "arch"})
	if got := names(members(t, c.home)); !cmp.Equal(got, before) {
		t.Errorf("members after close %v, want %v (codex1 gone, arch kept)", got, before)
	}

	// The team vanishes (Claude Code deletes a session team when its lead
	// exits): sessions still start and close.
	if err := os.RemoveAll(filepath.Join(c.home, ".claude", "teams", "dev")); err != nil {
		t.Fatal(err)
	}
	res = c.structured(c.tool("codex", map[string]any{"prompt": "still here", "identity": "codex2"}))
	if res["content"] != "echo: still here" {
		t.Errorf("codex after the team vanished: %v", res)
	}
	c.tool("agent_close", map[string]any{"agent_id": res["agent_id"]})
}

func TestLeadText(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    atmclient.Message
		want string
	}{
		{"summary", atmclient.Message{From: "codex1", SourceTeam: "dev", Summary: "tests", Text: "all pass"},
			"<cross-session-message from=\"codex1\" from-name=\"codex1\">\n(tests) all pass\n</cross-session-message>"},
		{"automatic summary left out", atmclient.Message{From: "codex1", Summary: "a long report...", Text: "a long report with details"},
			"<cross-session-message from=\"codex1\" from-name=\"codex1\">\na long report with details\n</cross-session-message>"},
		{"other team", atmclient.Message{From: "qa", SourceTeam: "other", Text: "hi"},
			"<cross-session-message from=\"qa%40other\" from-name=\"qa@other\">\nhi\n</cross-session-message>"},
		{"qualified sender", atmclient.Message{From: "qa@other", SourceTeam: "other", Text: "hi"},
			"<cross-session-message from=\"qa%40other\" from-name=\"qa@other\">\nhi\n</cross-session-message>"},
	} {
		if got := leadText("dev", tc.m); got != tc.want {
			t.Errorf("%s: leadText = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestIdleText(t *testing.T) {
	long := strings.Repeat("é", atmclient.MaxIdleResult+5)
	for _, tc := range []struct {
		name string
		n    atmclient.IdleNotification
		want string
	}{
		{"one line", atmclient.IdleNotification{IdleReason: atmclient.IdleAvailable, Summary: "all pass", Result: "all pass"}, "Finished its turn: all pass"},
		{"a longer result", atmclient.IdleNotification{IdleReason: atmclient.IdleAvailable, Summary: "all pass", Result: "all pass\n\n3 packages"},
			"Finished its turn: all pass\n\nall pass\n\n3 packages"},
		{"no result", atmclient.IdleNotification{IdleReason: atmclient.IdleAvailable, Summary: "turn completed"}, "Finished its turn"},
		{"interrupted", atmclient.IdleNotification{IdleReason: atmclient.IdleInterrupted, Summary: "turn interrupted", Result: "half done"},
			"Its turn was interrupted\n\nhalf done"},
		{"failed", atmclient.IdleNotification{IdleReason: atmclient.IdleFailed, Summary: "turn failed", Result: "codex child process is not running"},
			"Its turn failed: codex child process is not running"},
		{"clipped", atmclient.IdleNotification{IdleReason: atmclient.IdleAvailable, Summary: "é", Result: long},
			"Finished its turn: é\n\n" + long[:2*atmclient.MaxIdleResult] + "…"},
	} {
		if got := idleText(tc.n); got != tc.want {
			t.Errorf("%s: idleText = %.200q, want %.200q", tc.name, got, tc.want)
		}
	}
}

// TestLeadPushFlush: flush, which runs before a turn's result is answered,
// pushes the lead's unread mail and waits for its mark, even when nothing
// else would check the inbox soon (no watch, an hour's poll); with nothing
// unread it returns at once.
func TestLeadPushFlush(t *testing.T) {
	home := t.TempDir()
	writeTeam(t, home, "dev", "team-lead", "arch")
	sock := listenCC(t, socketPath(t))
	atm, err := atmclient.New(atmclient.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	lp := newLeadPush(Options{Team: "dev", Identity: "team-lead", DefaultIdentity: "codex", LeadPush: true,
		MessagingSocket: sock.path, Now: time.Now}, atm, slog.New(slog.DiscardHandler))
	br, err := mailbridge.New(mailbridge.Config{ATM: atm, Team: "dev", Target: noTarget{}, PollInterval: time.Hour, DisableWatch: true, OnBatch: lp.marked})
	if err != nil {
		t.Fatal(err)
	}
	if err := br.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	defer lp.close()
	lp.start(br)
	ctx := context.Background()

	start := time.Now()
	lp.flush(ctx, nil)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("flush with nothing unread took %v", d)
	}
	send(t, home, "arch", "team-lead", "done with the turn", "")
	released := false
	lp.flush(ctx, func() { released = true })
	if !released {
		t.Error("flush with mail to wait for did not release its caller's reader first")
	}
	if n, err := atm.Pending(ctx, "dev", "team-lead"); n != 0 || err != nil {
		t.Fatalf("after flush: %d unread (%v), want 0", n, err)
	}
	if line := sock.next(t); line["message"].(map[string]any)["content"] != ccmsg.Envelope("arch", "arch", "done with the turn") {
		t.Errorf("pushed line %v", line)
	}
}

// TestTeamMembershipStale: at start the proxy removes what a crashed proxy
// left in config.json (its own members whose identity nobody holds), keeps
// the user's members and its own members that a live session holds, and
// treats an entry of its own that a session binds again as its own.
func TestTeamMembershipStale(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".claude", "teams", "dev")
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o755); err != nil {
		t.Fatal(err)
	}
	ours := func(name string) string {
		return `{"agentId":"` + name + `@dev","name":"` + name + `","agentType":"codex","backendType":"atm-agent-mcp","joinedAt":1}`
	}
	cfg := `{"name":"dev","leadAgentId":"team-lead@dev","members":[{"agentId":"team-lead@dev","name":"team-lead","agentType":"team-lead"},` +
		`{"agentId":"arch@dev","name":"arch","agentType":"codex"},` + ours("ghost") + `,` + ours("held") + `,` + ours("codex1") + `]}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	regDir, err := registry.TeamDir(home, "dev")
	if err != nil {
		t.Fatal(err)
	}
	held, err := regDir.Claim("held", "") // another proxy's live session
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	c := startProxyAt(t, home, harnessOpts{modify: func(o *Options) { o.Identity, o.DefaultIdentity = "team-lead", "codex" }})
	c.initialize(false)
	poll.Until(t, "the stale members ghost and codex1 removed, the others kept", func() bool {
		return cmp.Equal(names(members(t, home)), []string{"arch", "held", "team-lead"})
	})
	res := c.structured(c.tool("codex", map[string]any{"prompt": "hi", "identity": "codex1"}))
	c.tool("agent_close", map[string]any{"agent_id": res["agent_id"]})
	if got, want := names(members(t, home)), []string{"arch", "held", "team-lead"}; !cmp.Equal(got, want) {
		t.Errorf("members after codex1 came and went %v, want %v", got, want)
	}
	// The other proxy ends; a session here binds held, whose entry is a
	// proxy's own: it goes when that session closes.
	held.Release()
	res = c.structured(c.tool("codex", map[string]any{"prompt": "hi", "identity": "held"}))
	c.tool("agent_close", map[string]any{"agent_id": res["agent_id"]})
	if got, want := names(members(t, home)), []string{"arch", "team-lead"}; !cmp.Equal(got, want) {
		t.Errorf("members after held came and went %v, want %v", got, want)
	}
}

// TestLeadMembership: while the lead's mail is pushed, a lead identity the
// configured team does not list (a second window's lead-2) joins
// config.json as agentType lead, so that agents can mail it, and leaves at
// shutdown; a listed one is left alone; without the push nothing joins.
func TestLeadMembership(t *testing.T) {
	for _, tc := range []struct {
		name     string
		modify   func(*Options)
		want     string // the lead's agentType while serve runs; "" for not listed
		wantKept bool   // listed after shutdown
	}{
		{"a second window's lead", func(o *Options) { leadOpts("/nonexistent.sock")(o); o.Identity = "lead-2" }, "lead", false},
		{"a listed lead", func(o *Options) { leadOpts("/nonexistent.sock")(o) }, "general-purpose", true},
		{"no push", func(o *Options) { leadOpts("")(o); o.Identity = "lead-2" }, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startProxy(t, harnessOpts{modify: tc.modify})
			c.initialize(false)
			identity := c.structured(c.tool("agent_status", map[string]any{}))["instance_identity"].(string)
			m := members(t, c.home)[identity]
			got, _ := m["agentType"].(string)
			if got != tc.want {
				t.Errorf("%s in config.json while serve runs: %v, want agentType %q", identity, m, tc.want)
			}
			if tc.want == "lead" {
				send(t, c.home, "arch", identity, "to the second window", "")
				if ms := inbox(t, c.home, identity); len(ms) != 1 {
					t.Errorf("mail to %s: %+v", identity, ms)
				}
			}
			c.close()
			if _, kept := members(t, c.home)[identity]; kept != tc.wantKept {
				t.Errorf("%s listed after shutdown: %v, want %v", identity, kept, tc.wantKept)
			}
		})
	}
}

// TestLeadPushResumedHolder: a session resumed at start that holds the
// lead's identity keeps it; the push waits for it to close.
func TestLeadPushResumedHolder(t *testing.T) {
	home := t.TempDir()
	sock := listenCC(t, socketPath(t))
	first := startProxyAt(t, home, harnessOpts{modify: leadOpts(sock.path)})
	first.initialize(false)
	first.structured(first.tool("codex", map[string]any{"prompt": "hold", "identity": "team-lead"}))
	first.close()

	resume := "team-lead"
	c := startProxyAt(t, home, harnessOpts{modify: leadOpts(sock.path), resume: &resume})
	c.initialize(false)
	lm := leadStatus(c)
	if lm["path"] != "inbox" || !strings.Contains(lm["reason"].(string), "a Codex session holds team-lead") {
		t.Fatalf("lead_mail with a resumed holder = %v", lm)
	}
	c.tool("agent_close", map[string]any{"identity": "team-lead"})
	poll.Until(t, "the push back", func() bool { return leadStatus(c)["path"] == "socket" })
}

// TestLeadFlushFreesReader: a turn-ending call whose answer waits for the
// lead's mail (flush: pushed, not yet marked read, the inbox held by
// another writer's lock) does not hold up the reading of the client: a
// ping sent after it is answered first, and the call is answered once the
// mark is made (the push's signal, not a poll).
func TestLeadFlushFreesReader(t *testing.T) {
	sock := listenCC(t, socketPath(t))
	c := startProxy(t, harnessOpts{modify: leadOpts(sock.path)})
	c.initialize(false)
	inboxPath := filepath.Join(c.home, ".claude", "teams", "dev", "inboxes", "team-lead.json")
	// Claude Code's lock on the inbox (a directory made with mkdir): the
	// bridge's mark waits for it. The mail is written past the lock, as a
	// writer that takes none would.
	lockDir := inboxPath + ".lock"
	if err := os.MkdirAll(filepath.Dir(inboxPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(lockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			os.Remove(lockDir)
		}
	}
	defer unlock()
	mail := `[{"from":"arch","text":"from the turn","timestamp":"2026-11-28T10:00:00.000Z","read":false,"message_id":"m-1"}]`
	if err := os.WriteFile(inboxPath, []byte(mail), 0o644); err != nil {
		t.Fatal(err)
	}
	sock.next(t) // auth
	if line := sock.next(t); line["message"].(map[string]any)["content"] != ccmsg.Envelope("arch", "arch", "from the turn") {
		t.Fatalf("pushed line %v", line)
	}
	// The mail is pushed; its mark waits for the lock. A reply to no
	// session ends at once, on the reader, and flushes before its answer.
	_, reply := c.send("tools/call", map[string]any{"name": "codex-reply", "arguments": map[string]any{"agent_id": "no-such-agent", "prompt": "hi"}})
	_, ping := c.send("ping", nil)
	var first string
	select {
	case <-ping:
		first = "ping"
	case m := <-reply:
		first = "codex-reply"
		reply <- m
	}
	if first != "ping" {
		t.Errorf("first answer: %s, want the ping's (the reader waited for the flush)", first)
	}
	unlock()
	if m := c.wait(reply); m.Error == nil {
		t.Errorf("codex-reply to no session: %s, want an error", m.Result)
	}
	poll.Until(t, "the pushed message marked read", func() bool {
		ms := inbox(t, c.home, "team-lead")
		return len(ms) == 1 && ms[0].Read
	})
}

// TestLeadPushClose: close waits for a push under way (its outcome is
// reported to the bridge before close returns, so that the bridge, closed
// next, marks it), and the push takes nothing after it.
func TestLeadPushClose(t *testing.T) {
	checkNoLeaks(t)
	sock := listenCC(t, socketPath(t))
	lp := newLeadPush(Options{Team: "dev", Identity: "team-lead", DefaultIdentity: "codex", LeadPush: true,
		MessagingSocket: sock.path, Now: time.Now}, nil, slog.New(slog.DiscardHandler))
	msgs := []atmclient.Message{{From: "arch", Text: "last words"}}
	var sent atomic.Int32
	if !lp.DeliverMessages("team-lead", msgs, func(ok bool) {
		if ok {
			sent.Add(1)
		}
	}) {
		t.Fatal("the push took nothing")
	}
	lp.close()
	if sent.Load() != 1 {
		t.Errorf("pushes reported sent when close returned: %d, want 1", sent.Load())
	}
	if lp.DeliverMessages("team-lead", msgs, func(bool) { t.Error("done called after close") }) {
		t.Error("the push took mail after close")
	}
}
