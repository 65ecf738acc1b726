package atmclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHome(t *testing.T) {
	t.Setenv("ATM_HOME", "  /tmp/atm-x/  ")
	if h, err := Home(); err != nil || h != "/tmp/atm-x" {
		t.Errorf("Home() = %q, %v; want /tmp/atm-x", h, err)
	}
	t.Setenv("ATM_HOME", " ")
	t.Setenv("HOME", "/tmp/home-y")
	if h, err := Home(); err != nil || h != "/tmp/home-y" {
		t.Errorf("Home() with blank ATM_HOME = %q, %v; want $HOME", h, err)
	}
}

func TestSendReadMarkPending(t *testing.T) {
	c, _ := newTestHome(t, "team-lead", "arch-ctm", "qa")
	c.now = fixedClock(time.Date(2026, 3, 18, 20, 0, 0, 0, time.UTC))
	writeTeam(t, c.Home(), "other", "ext")
	send := func(from, to, text string) Message {
		t.Helper()
		m, err := c.Send(bg, SendRequest{From: from, Team: "dev", To: to, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m1 := send("team-lead", "arch-ctm", "one")
	send("qa", "arch-ctm", "two")
	m3 := send("team-lead", "arch-ctm", `{"type":"idle_notification","from":"team-lead"}`)
	send("team-lead", "ext@other", "cross team")

	if m1.SourceTeam != "dev" || m1.Summary != "one" || len(m1.MessageID) != 36 || m1.MessageID[14] != '4' {
		t.Errorf("sent message = %+v; want source_team dev, summary, UUIDv4 id", m1)
	}
	if m3.Summary != "" {
		t.Errorf("an idle notification sent without a summary got %q; want none (Claude Code's lead shows a frame with one as text)", m3.Summary)
	}
	if !m3.IsProtocol() || m1.IsProtocol() {
		t.Errorf("IsProtocol: idle notification %v, mail %v; want true, false", m3.IsProtocol(), m1.IsProtocol())
	}
	texts := func(o ReadOptions) []string {
		t.Helper()
		res, err := c.Read(bg, "dev", "arch-ctm", o)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, m := range res.Messages {
			s = append(s, m.Text)
		}
		return s
	}
	tests := []struct {
		name string
		opts ReadOptions
		want []string
	}{
		{"default", ReadOptions{}, []string{"one", "two"}},
		{"protocol", ReadOptions{IncludeProtocol: true}, []string{"one", "two", m3.Text}},
		{"from", ReadOptions{From: "qa"}, []string{"two"}},
		{"limit", ReadOptions{Limit: 1}, []string{"one"}},
		{"since", ReadOptions{Since: time.Date(2026, 3, 18, 20, 0, 0, 2e6, time.UTC)}, []string{"two"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, texts(tt.opts)); diff != "" {
			t.Errorf("Read %s mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
	if n, err := c.Pending(bg, "dev", "arch-ctm"); err != nil || n != 2 {
		t.Errorf("Pending = %d, %v; want 2", n, err)
	}
	if n, err := c.MarkRead(bg, "dev", "arch-ctm", m1.Key()); err != nil || n != 1 {
		t.Errorf("MarkRead = %d, %v; want 1", n, err)
	}
	if diff := cmp.Diff([]string{"two"}, texts(ReadOptions{})); diff != "" {
		t.Errorf("Read after MarkRead mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"one", "two"}, texts(ReadOptions{All: true})); diff != "" {
		t.Errorf("Read all mismatch (-want +got):\n%s", diff)
	}
	res, err := c.Read(bg, "other", "ext", ReadOptions{})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].SourceTeam != "dev" {
		t.Errorf("cross-team Read = %+v, %v; want one message with source_team dev", res, err)
	}
	// Reading an inbox that does not exist yet is empty, not an error.
	if res, err := c.Read(bg, "dev", "qa", ReadOptions{}); err != nil || len(res.Messages) != 0 {
		t.Errorf("Read of a missing inbox = %+v, %v; want empty", res, err)
	}
}

func TestBroadcast(t *testing.T) {
	c, _ := newTestHome(t, "team-lead", "a", "b")
	res, err := c.Broadcast(bg, BroadcastRequest{From: "team-lead", Team: "dev", Text: "all hands"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, res.Recipients); diff != "" {
		t.Errorf("Recipients mismatch (-want +got):\n%s", diff)
	}
	for _, agent := range []string{"a", "b"} {
		got, err := c.Read(bg, "dev", agent, ReadOptions{})
		if err != nil || len(got.Messages) != 1 || got.Messages[0].MessageID != res.Message.MessageID {
			t.Errorf("inbox %s = %+v, %v; want the broadcast with id %s", agent, got, err, res.Message.MessageID)
		}
	}
	if _, err := os.Stat(inboxPath(t, c, "dev", "team-lead")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sender's inbox exists after its own broadcast: %v", err)
	}
	// Re-appending a message with a known message_id is deduplicated.
	if err := c.appendMessage(bg, "dev", "a", res.Message); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Read(bg, "dev", "a", ReadOptions{All: true}); len(got.Messages) != 1 {
		t.Errorf("after re-append inbox has %d messages, want 1", len(got.Messages))
	}
}

func TestSummarize(t *testing.T) {
	long := strings.Repeat("word ", 30) // 150 chars
	tests := []struct{ in, want string }{
		{"  short  ", "short"},
		{strings.Repeat("x", 100), strings.Repeat("x", 100)},
		{long, strings.TrimSpace(strings.Repeat("word ", 20)) + "..."},
		{strings.Repeat("y", 150), strings.Repeat("y", 100) + "..."},
		{strings.Repeat("é", 99) + " " + strings.Repeat("é", 10), strings.Repeat("é", 99) + "..."},
	}
	for _, tt := range tests {
		if got := Summarize(tt.in); got != tt.want {
			t.Errorf("Summarize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBadNames(t *testing.T) {
	for _, name := range []string{"", "/", "a/b", `a\b`, "..", "a..b", ".", "a\x00b", "a\nb", "a\x7fb", "ab\u202ec", "a\u200bb", "\ufeffa", " a", strings.Repeat("n", MaxNameLength+1), "\xff"} {
		if err := ValidateName("agent", name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	for _, name := range []string{"arch-ctm", "team-lead", "a.b", "Ünï", "ｄｅｖ-１", "开发者", "dev-😀", strings.Repeat("n", MaxNameLength)} {
		if err := ValidateName("agent", name); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", name, err)
		}
	}
	c, home := newTestHome(t, "a")
	for _, req := range []SendRequest{
		{From: "a", Team: "dev", To: "../a", Text: "x"},
		{From: "a", Team: "dev", To: "a@../dev", Text: "x"},
		{From: "../x", Team: "dev", To: "a", Text: "x"},
		{From: "a", Team: "de/v", To: "a", Text: "x"},
	} {
		if _, err := c.Send(bg, req); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Send(%+v) = %v, want ErrInvalidName", req, err)
		}
	}
	for _, to := range []string{"", "@dev", "a@", "@"} {
		if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: to, Text: "x"}); !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("Send to %q = %v, want ErrInvalidAddress", to, err)
		}
	}
	for _, call := range []func() error{
		func() error { _, err := c.Read(bg, "..", "a", ReadOptions{}); return err },
		func() error { _, err := c.MarkRead(bg, "dev", "a/../../x", "k"); return err },
		func() error { _, err := c.Pending(bg, "dev", "\x00"); return err },
		func() error { _, err := c.TeamConfig(""); return err },
	} {
		if err := call(); !errors.Is(err, ErrInvalidName) {
			t.Errorf("call with a bad name = %v, want ErrInvalidName", err)
		}
	}
	assertOnlyTeamDev(t, home)
}

// assertOnlyTeamDev checks that nothing was created outside team dev.
func assertOnlyTeamDev(t *testing.T, home string) {
	t.Helper()
	var paths []string
	filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error {
		if rel, _ := filepath.Rel(home, p); !strings.HasPrefix(rel, ".claude/teams/dev") && rel != "." && rel != ".claude" && rel != ".claude/teams" {
			paths = append(paths, rel)
		}
		return nil
	})
	if len(paths) > 0 {
		t.Errorf("files created outside the team: %v", paths)
	}
}

func TestBadText(t *testing.T) {
	c, _ := newTestHome(t, "a")
	tests := []struct{ name, text, errPart string }{
		{"empty", "", "blank"},
		{"blank", " \n\t ", "blank"},
		{"NUL", "a\x00b", "NUL"},
		{"too long", strings.Repeat("x", MaxTextBytes+1), "limit of 1048576 bytes"},
		{"invalid UTF-8", "a\xffb", "UTF-8"},
	}
	for _, tt := range tests {
		_, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: tt.text})
		if !errors.Is(err, ErrInvalidText) || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("Send %s text = %v, want ErrInvalidText mentioning %q", tt.name, err, tt.errPart)
		}
	}
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: strings.Repeat("x", MaxTextBytes)}); err != nil {
		t.Errorf("Send of exactly MaxTextBytes = %v, want nil", err)
	}
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "x", Summary: "s\x00"}); !errors.Is(err, ErrInvalidText) {
		t.Errorf("Send with a NUL in the summary = %v, want ErrInvalidText", err)
	}
}

func TestMissingTeamAndMember(t *testing.T) {
	c, _ := newTestHome(t, "a")
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "b", Text: "x"}); !errors.Is(err, ErrNotMember) {
		t.Errorf("Send to a non-member = %v, want ErrNotMember", err)
	}
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a@nope", Text: "x"}); !errors.Is(err, ErrTeamNotFound) {
		t.Errorf("Send to a missing team = %v, want ErrTeamNotFound", err)
	}
	if _, err := c.Broadcast(bg, BroadcastRequest{From: "a", Team: "dev", ToTeam: "nope", Text: "x"}); !errors.Is(err, ErrTeamNotFound) {
		t.Errorf("Broadcast to a missing team = %v, want ErrTeamNotFound", err)
	}
	if _, err := c.Read(bg, "nope", "a", ReadOptions{}); !errors.Is(err, ErrTeamNotFound) {
		t.Errorf("Read in a missing team = %v, want ErrTeamNotFound", err)
	}
	if _, err := c.MarkRead(bg, "nope", "a", "k"); !errors.Is(err, ErrTeamNotFound) {
		t.Errorf("MarkRead in a missing team = %v, want ErrTeamNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(c.Home(), ".claude", "teams", "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing team's directory was created: %v", err)
	}
}

func TestCorruptInbox(t *testing.T) {
	tests := []struct{ name, content string }{
		{"not JSON", "this is not json"},
		{"truncated", `[{"from": "a", "text": "x", "timestamp": "2026-01-01T00:00:00Z"}, {"from": "b`},
		{"object", `{"from": "a"}`},
		{"invalid element", `[{"from": "a", "text": "x", "timestamp": "2026-01-01T00:00:00Z"}, {"from": tru}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestHome(t, "a")
			path := inboxPath(t, c, "dev", "a")
			os.WriteFile(path, []byte(tt.content), 0o644)
			_, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "x"})
			if !errors.Is(err, ErrCorruptInbox) {
				t.Errorf("Send to a corrupt inbox = %v, want ErrCorruptInbox", err)
			}
			if _, err := c.MarkRead(bg, "dev", "a", "k"); !errors.Is(err, ErrCorruptInbox) {
				t.Errorf("MarkRead on a corrupt inbox = %v, want ErrCorruptInbox", err)
			}
			if got := string(mustRead(t, path)); got != tt.content {
				t.Errorf("corrupt inbox was rewritten: %q", got)
			}
		})
	}
}

// TestMalformedElements: elements that are JSON but not messages are
// reported, the rest is returned, and a write keeps them.
func TestMalformedElements(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	os.WriteFile(path, []byte(`[
  {"from": "a", "text": "ok 1", "timestamp": "2026-01-01T00:00:00Z"},
  {"from": "a", "timestamp": "2026-01-01T00:00:01Z"},
  42,
  {"from": 7, "text": "x", "timestamp": "2026-01-01T00:00:02Z"},
  {"from": "a", "text": "x", "timestamp": "2026-01-01T00:00:03Z", "read": "yes"},
  {"from": "a", "text": "ok 2", "timestamp": "2026-01-01T00:00:04Z"}
]`), 0o644)
	res, err := c.Read(bg, "dev", "a", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, p := range res.Problems {
		idx = append(idx, p.Index)
		if !strings.Contains(p.Err.Error(), "not an inbox message") {
			t.Errorf("problem %d: %v", p.Index, p.Err)
		}
	}
	if diff := cmp.Diff([]int{1, 2, 3, 4}, idx); diff != "" {
		t.Errorf("problem indexes mismatch (-want +got):\n%s", diff)
	}
	if len(res.Messages) != 2 || res.Messages[1].Text != "ok 2" {
		t.Errorf("Read messages = %+v, want ok 1 and ok 2", res.Messages)
	}
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "new"}); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`"timestamp": "2026-01-01T00:00:01Z"`, "  42,\n", `"from": 7`, `"read": "yes"`, `"text": "new"`} {
		if !strings.Contains(string(mustRead(t, path)), part) {
			t.Errorf("inbox after Send lacks %q", part)
		}
	}
}

func TestUnreadableInbox(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	if err := os.Mkdir(path, 0o700); err != nil { // a directory where the file should be
		t.Fatal(err)
	}
	if _, err := c.Read(bg, "dev", "a", ReadOptions{}); err == nil || !strings.Contains(err.Error(), "read inbox") {
		t.Errorf("Read of an unreadable inbox = %v, want a read inbox error", err)
	}
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "x"}); err == nil {
		t.Error("Send to an unreadable inbox succeeded")
	}
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		t.Errorf("unreadable inbox was replaced: %v", err)
	}
	if os.Geteuid() != 0 {
		p2 := inboxPath(t, c, "dev", "b")
		os.WriteFile(p2, []byte("[]"), 0o000)
		if _, err := c.Read(bg, "dev", "b", ReadOptions{}); !errors.Is(err, os.ErrPermission) {
			t.Errorf("Read of a mode 000 inbox = %v, want a permission error", err)
		}
	}
}

func TestTeamConfigRoundTrip(t *testing.T) {
	c, home := newTestHome(t)
	in := `{"name":"dev","description":"d","createdAt":1770000000000,"leadAgentId":"team-lead@dev","leadSessionId":"s","future":{"x":[1]},` +
		`"members":[{"agentId":"a@dev","name":"a","agentType":"t","model":"m","joinedAt":1,"cwd":"/w","color":"blue","planModeRequired":false,"tmuxPaneId":"%1","subscriptions":[],"backendType":"tmux","isActive":true,"lastActive":2,"sessionId":"s","externalBackendType":"codex","externalModel":"gpt","prompt":"p","novel":null}]}`
	os.WriteFile(filepath.Join(home, ".claude", "teams", "dev", "config.json"), []byte(in), 0o600)
	team, err := c.TeamConfig("dev")
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := team.Member("a"); !ok || m.AgentID != "a@dev" || team.LeadAgentID != "team-lead@dev" {
		t.Errorf("TeamConfig = %+v", team)
	}
	out, err := team.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	jsonUnmarshal(t, []byte(in), &want)
	jsonUnmarshal(t, out, &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config.json round trip lost something (-want +got):\n%s", diff)
	}
}
