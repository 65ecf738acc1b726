package mailbridge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// newHome makes a temporary ATM home (also set as ATM_HOME) with team "dev"
// whose members are given, and returns a Client for it.
func newHome(t testing.TB, members ...string) *atmclient.Client {
	t.Helper()
	home := t.TempDir()
	t.Setenv("ATM_HOME", home)
	writeTeam(t, home, "dev", true, members...)
	c, err := atmclient.New(atmclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeTeam writes {home}/.claude/teams/{team}/config.json with members,
// and the inboxes directory when inboxes is true.
func writeTeam(t testing.TB, home, team string, inboxes bool, members ...string) {
	t.Helper()
	var ms []map[string]any
	for _, m := range members {
		ms = append(ms, map[string]any{"agentId": m + "@" + team, "name": m, "agentType": "codex", "model": "x", "joinedAt": 1770000000000, "cwd": "/w"})
	}
	cfg := map[string]any{"name": team, "createdAt": 1770000000000, "leadAgentId": "team-lead@" + team, "leadSessionId": "s", "members": ms}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".claude", "teams", team)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if inboxes {
		if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// send sends text from "team-lead" to agent in team "dev" through the
// locked atmclient path and returns the message as written.
func send(t testing.TB, c *atmclient.Client, to, text string) atmclient.Message {
	t.Helper()
	m, err := c.Send(context.Background(), atmclient.SendRequest{From: "team-lead", Team: "dev", To: to, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// appendRaw appends elements to an inbox the way Claude Code does: read the
// array, add, write the file in place, without the lock.
func appendRaw(t testing.TB, c *atmclient.Client, agent string, elems ...map[string]any) {
	t.Helper()
	path, err := c.InboxPath("dev", agent)
	if err != nil {
		t.Fatal(err)
	}
	var arr []json.RawMessage
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &arr); err != nil {
			t.Fatal(err)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range elems {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		arr = append(arr, b)
	}
	b, err := json.MarshalIndent(arr, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// inbox returns every element of agent's inbox, read or not, protocol or
// not.
func inbox(t testing.TB, c *atmclient.Client, agent string) []atmclient.Message {
	t.Helper()
	res, err := c.Read(context.Background(), "dev", agent, atmclient.ReadOptions{All: true, IncludeProtocol: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Messages
}

// unread returns the texts of agent's unread mail.
func unread(t testing.TB, c *atmclient.Client, agent string) []string {
	t.Helper()
	res, err := c.Read(context.Background(), "dev", agent, atmclient.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range res.Messages {
		out = append(out, m.Text)
	}
	return out
}

// delivery is one Deliver call the fake target accepted.
type delivery struct {
	identity string
	prompt   string
	at       time.Time
	done     func(sent bool)
}

// ackMode is how fakeTarget settles an accepted delivery.
type ackMode int

const (
	ackSent  ackMode = iota // done(true) before Deliver returns
	ackAsync                // done(true) from another goroutine
	ackNever                // keep done; the test calls it (or not)
	ackFail                 // done(false): the write failed
)

// fakeTarget plays the proxy: an identity is idle until a delivery makes
// it busy; setIdle makes it idle again.
type fakeTarget struct {
	mu     sync.Mutex
	busy   map[string]bool
	mode   ackMode
	got    []delivery
	ch     chan delivery
	onCall func(identity, prompt string) // optional, runs first
	calls  int                           // Deliver calls, accepted or not
}

func newFakeTarget(mode ackMode) *fakeTarget {
	return &fakeTarget{busy: map[string]bool{}, mode: mode, ch: make(chan delivery, 1000)}
}

func (f *fakeTarget) Deliver(identity, prompt string, _ []atmclient.Message, done func(bool)) bool {
	if f.onCall != nil {
		f.onCall(identity, prompt)
	}
	f.mu.Lock()
	f.calls++
	if f.busy[identity] {
		f.mu.Unlock()
		return false
	}
	f.busy[identity] = true
	d := delivery{identity: identity, prompt: prompt, at: time.Now(), done: done}
	f.got = append(f.got, d)
	mode := f.mode
	f.mu.Unlock()
	f.ch <- d
	switch mode {
	case ackSent:
		done(true)
	case ackAsync:
		go done(true)
	case ackFail:
		done(false)
	}
	return true
}

// setBusy marks identity busy (a turn runs) or idle.
func (f *fakeTarget) setBusy(identity string, busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy[identity] = busy
}

// next waits for the next accepted delivery.
func (f *fakeTarget) next(t testing.TB, within time.Duration) delivery {
	t.Helper()
	select {
	case d := <-f.ch:
		return d
	case <-time.After(within):
		t.Fatalf("no delivery within %v", within)
		return delivery{}
	}
}

// none fails if a delivery arrives within d.
func (f *fakeTarget) none(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case got := <-f.ch:
		t.Fatalf("unexpected delivery to %s:\n%s", got.identity, got.prompt)
	case <-time.After(d):
	}
}

// batches collects OnBatch records.
type batches struct {
	mu  sync.Mutex
	got []Batch
	ch  chan Batch
}

func newBatches() *batches { return &batches{ch: make(chan Batch, 1000)} }

func (r *batches) record(bt Batch) {
	r.mu.Lock()
	r.got = append(r.got, bt)
	r.mu.Unlock()
	r.ch <- bt
}

func (r *batches) next(t testing.TB, within time.Duration) Batch {
	t.Helper()
	select {
	case bt := <-r.ch:
		return bt
	case <-time.After(within):
		t.Fatalf("no batch recorded within %v", within)
		return Batch{}
	}
}

// startBridge makes and starts a Bridge for team "dev"; cleanup closes it
// and fails the test if any of its goroutines is left.
func startBridge(t testing.TB, cfg Config) *Bridge {
	t.Helper()
	b := newBridge(t, cfg)
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

func newBridge(t testing.TB, cfg Config) *Bridge {
	t.Helper()
	if cfg.Team == "" {
		cfg.Team = "dev"
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		checkNoLeak(t)
	})
	return b
}

// checkNoLeak fails the test if a goroutine of this package or of fsnotify
// is still running shortly after a Close.
func checkNoLeak(t testing.TB) {
	t.Helper()
	var stacks string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		stacks = leakedStacks()
		if stacks == "" {
			return
		}
	}
	t.Errorf("goroutines left after Close:\n%s", stacks)
}

func leakedStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "mailbridge.(*Bridge)") || strings.Contains(g, "fsnotify.") {
			leaked = append(leaked, g)
		}
	}
	return strings.Join(leaked, "\n\n")
}

// waitFor polls cond until it holds or within passes.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
	}
}
