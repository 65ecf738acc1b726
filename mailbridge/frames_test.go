package mailbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/google/go-cmp/cmp"
)

// ccEntry is an inbox element as Claude Code 2.1.332's SendMessage writes
// it: msg_id (no message_id), msgV, type "message", read false.
func ccEntry(from, text, ts, msgID string) map[string]any {
	return map[string]any{"from": from, "text": text, "summary": "s", "timestamp": ts,
		"msgV": 1, "msg_id": msgID, "type": "message", "read": false}
}

// frames collects OnFrame calls.
type frameLog struct {
	mu  sync.Mutex
	got []string // "identity type requestID"
	ch  chan string
}

func newFrameLog() *frameLog { return &frameLog{ch: make(chan string, 100)} }

func (l *frameLog) record(identity string, m atmclient.Message, f atmclient.Frame) {
	s := fmt.Sprintf("%s %s %s", identity, f.Type, f.RequestID)
	l.mu.Lock()
	l.got = append(l.got, s)
	l.mu.Unlock()
	l.ch <- s
}

func (l *frameLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// readFlags returns "text-prefix read=bool" for every element of agent's
// inbox.
func readFlags(t testing.TB, c *atmclient.Client, agent string) []string {
	t.Helper()
	var got []string
	for _, m := range inbox(t, c, agent) {
		got = append(got, fmt.Sprintf("%s read=%t", m.Text[:min(len(m.Text), 24)], m.Read))
	}
	return got
}

// TestFramesToSession: every kind of protocol frame in a session's inbox is
// handed to OnFrame once, in inbox order, never put into an envelope, and
// marked read; the mail around it is delivered as usual.
func TestFramesToSession(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string // what OnFrame saw
	}{
		{"shutdown request", `{"type":"shutdown_request","requestId":"shutdown-1@arch","from":"team-lead","reason":"done","timestamp":"2026-11-25T10:00:00.000Z"}`,
			"arch shutdown_request shutdown-1@arch"},
		{"plan approval request", `{"type":"plan_approval_request","requestId":"plan-7","from":"team-lead","planContent":"x"}`,
			"arch plan_approval_request plan-7"},
		{"permission request", `{"type":"permission_request","request_id":"perm-3","tool_name":"Bash"}`,
			"arch permission_request perm-3"},
		{"idle notification", `{"type":"idle_notification","from":"qa","timestamp":"2026-11-25T10:00:00.000Z","idleReason":"available","result":"ok"}`,
			"arch idle_notification "},
		{"shutdown response", `{"type":"shutdown_response","request_id":"shutdown-2@qa","approve":true}`,
			"arch shutdown_response shutdown-2@qa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newHome(t, "arch", "team-lead")
			appendRaw(t, c, "arch",
				ccEntry("team-lead", "before the frame", "2026-11-25T10:00:00.000Z", "m-1"),
				ccEntry("team-lead", tt.text, "2026-11-25T10:00:01.000Z", "m-2"),
				ccEntry("team-lead", "after the frame", "2026-11-25T10:00:02.000Z", "m-3"),
			)
			target, fl := newFakeTarget(ackSent), newFrameLog()
			b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick, OnFrame: fl.record})
			if err := b.Bind("arch"); err != nil {
				t.Fatal(err)
			}
			d := target.next(t, soon)
			if got, want := texts(t, d.prompt), []string{"before the frame", "after the frame"}; !slices.Equal(got, want) {
				t.Errorf("delivered %q, want %q", got, want)
			}
			if strings.Contains(d.prompt, `"type"`) {
				t.Errorf("a frame went into the envelope:\n%s", d.prompt)
			}
			waitFor(t, soon, "everything read", func() bool { return len(unreadAll(t, c, "arch")) == 0 })
			target.setBusy("arch", false)
			b.Idle("arch")
			time.Sleep(quiet) // more checks: the poll and the Idle
			if diff := cmp.Diff([]string{tt.want}, fl.all()); diff != "" {
				t.Errorf("OnFrame calls (-want +got):\n%s", diff)
			}
			if st := b.Stats("arch"); st.Frames != 1 || st.Delivered != 2 || st.Pending != 0 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

// unreadAll returns the texts of agent's unread messages, frames included.
func unreadAll(t testing.TB, c *atmclient.Client, agent string) []string {
	t.Helper()
	res, err := c.Read(context.Background(), "dev", agent, atmclient.ReadOptions{IncludeProtocol: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range res.Messages {
		out = append(out, m.Text)
	}
	return out
}

// TestFramesWithAutoMailOff: frames are handed over and marked even when
// auto-mail is off (a shutdown request must work); the mail stays unread.
func TestFramesWithAutoMailOff(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	appendRaw(t, c, "arch",
		ccEntry("team-lead", "mail", "2026-11-25T10:00:00.000Z", "m-1"),
		ccEntry("team-lead", `{"type":"shutdown_request","requestId":"shutdown-1@arch"}`, "2026-11-25T10:00:01.000Z", "m-2"),
	)
	target, fl := newFakeTarget(ackSent), newFrameLog()
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick, OnFrame: fl.record, Disabled: true})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	if got := <-fl.ch; got != "arch shutdown_request shutdown-1@arch" {
		t.Errorf("OnFrame got %q", got)
	}
	want := []string{"mail read=false", `{"type":"shutdown_reques read=true`}
	waitFor(t, soon, "the frame marked", func() bool { return cmp.Equal(want, readFlags(t, c, "arch")) })
	target.none(t, quiet)
}

// TestMsgIDIsTheKey: Claude Code's msg_id identifies a message: the
// envelope carries it, the batch's key is "id:"+msg_id, and a second copy
// of the same msg_id is neither delivered nor left unread.
func TestMsgIDIsTheKey(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	appendRaw(t, c, "arch",
		ccEntry("team-lead", "hello arch", "2026-11-25T10:51:59.694Z", "1597dab6-0000-4000-8000-000000000001"),
		ccEntry("team-lead", "hello arch", "2026-11-25T10:51:59.694Z", "1597dab6-0000-4000-8000-000000000001"),
	)
	target, rec := newFakeTarget(ackSent), newBatches()
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick, OnBatch: rec.record})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d := target.next(t, soon)
	if got := texts(t, d.prompt); !slices.Equal(got, []string{"hello arch"}) {
		t.Errorf("delivered %q, want one copy", got)
	}
	if !strings.Contains(d.prompt, `id="1597dab6-0000-4000-8000-000000000001"`) {
		t.Errorf("envelope lacks the msg_id:\n%s", d.prompt)
	}
	bt := rec.next(t, soon)
	if diff := cmp.Diff([]string{"id:1597dab6-0000-4000-8000-000000000001"}, bt.Keys); diff != "" {
		t.Errorf("batch keys (-want +got):\n%s", diff)
	}
	if bt.Marked != 2 {
		t.Errorf("marked %d, want both copies", bt.Marked)
	}
	target.setBusy("arch", false)
	b.Idle("arch")
	target.none(t, quiet)
}

// msgTarget is a fake MessageTarget (the proxy's push to its client).
type msgTarget struct {
	mu   sync.Mutex
	ok   bool // accept deliveries
	hold bool // keep done for the test to call; else done(true) at once
	ch   chan msgDelivery
}

type msgDelivery struct {
	identity string
	texts    []string
	done     func(bool)
}

func newMsgTarget(hold bool) *msgTarget {
	return &msgTarget{ok: true, hold: hold, ch: make(chan msgDelivery, 100)}
}

func (m *msgTarget) DeliverMessages(identity string, msgs []atmclient.Message, done func(bool)) bool {
	m.mu.Lock()
	ok, hold := m.ok, m.hold
	m.mu.Unlock()
	if !ok {
		return false
	}
	d := msgDelivery{identity: identity, done: done}
	for _, x := range msgs {
		d.texts = append(d.texts, x.Text)
	}
	m.ch <- d
	if !hold {
		done(true)
	}
	return true
}

func (m *msgTarget) set(ok, hold bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ok, m.hold = ok, hold
}

func (m *msgTarget) next(t testing.TB) msgDelivery {
	t.Helper()
	select {
	case d := <-m.ch:
		return d
	case <-time.After(soon):
		t.Fatal("no DeliverMessages")
		return msgDelivery{}
	}
}

// TestBindTarget: the lead's identity bound with BindTarget gets its mail
// as raw messages (texts uncut, frames left out, MaxMessages at a time),
// marked read on done(true) and offered again after done(false) or a
// refusal; Config.Disabled does not stop it, SetAutoMail does; frames are
// handed to OnFrame once and left unread for Claude Code's own reader.
func TestBindTarget(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	long := strings.Repeat("x", 50)
	idle := `{"type":"idle_notification","from":"arch","timestamp":"2026-11-25T10:00:01.000Z","idleReason":"available"}`
	appendRaw(t, c, "team-lead",
		ccEntry("arch", long, "2026-11-25T10:00:00.000Z", "m-1"),
		ccEntry("arch", idle, "2026-11-25T10:00:01.000Z", "m-2"),
		ccEntry("arch", "second", "2026-11-25T10:00:02.000Z", "m-3"),
		ccEntry("arch", "third", "2026-11-25T10:00:03.000Z", "m-4"),
	)
	target, mt, fl, rec := newFakeTarget(ackSent), newMsgTarget(true), newFrameLog(), newBatches()
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick, OnFrame: fl.record, OnBatch: rec.record,
		MaxMessages: 2, MaxMessageLength: 10, Disabled: true})
	if err := b.BindTarget("team-lead", mt); err != nil {
		t.Fatal(err)
	}

	// In flight: not offered twice; done(false): nothing marked, offered
	// again.
	first := mt.next(t)
	if diff := cmp.Diff([]string{long, "second"}, first.texts); diff != "" {
		t.Errorf("first delivery (-want +got):\n%s", diff)
	}
	select {
	case d := <-mt.ch:
		t.Fatalf("offered again while in flight: %q", d.texts)
	case <-time.After(quiet):
	}
	mt.set(true, false)
	first.done(false)
	again := mt.next(t)
	if diff := cmp.Diff(first.texts, again.texts); diff != "" {
		t.Errorf("after done(false) (-want +got):\n%s", diff)
	}
	if bt := rec.next(t, soon); !bt.Raw || bt.Marked != 2 || bt.PromptLen != 0 || bt.Truncated != 0 {
		t.Errorf("batch = %+v", bt)
	}
	rest := mt.next(t) // the poll brings the rest
	if diff := cmp.Diff([]string{"third"}, rest.texts); diff != "" {
		t.Errorf("second batch (-want +got):\n%s", diff)
	}
	waitFor(t, soon, "all mail read", func() bool { return len(unread(t, c, "team-lead")) == 0 })
	time.Sleep(quiet)
	if diff := cmp.Diff([]string{"team-lead idle_notification "}, fl.all()); diff != "" {
		t.Errorf("OnFrame (-want +got):\n%s", diff)
	}
	if got := unreadAll(t, c, "team-lead"); !slices.Equal(got, []string{idle}) {
		t.Errorf("unread = %q, want the idle notification left for Claude Code", got)
	}
	st := b.Stats("team-lead")
	if !st.Bound || !st.AutoMail || st.Delivered != 3 || st.Batches != 2 || st.Frames != 1 || st.Pending != 0 {
		t.Errorf("stats = %+v", st)
	}
	target.none(t, 0) // no Codex turn for the lead

	// Switched off: mail waits, counted.
	b.SetAutoMail("team-lead", false)
	appendRaw(t, c, "team-lead", ccEntry("arch", "while off", "2026-11-25T10:00:04.000Z", "m-5"))
	waitFor(t, soon, "pending counted", func() bool { return b.Stats("team-lead").Pending == 1 })
	select {
	case d := <-mt.ch:
		t.Fatalf("delivered while off: %q", d.texts)
	case <-time.After(quiet):
	}
	b.SetAutoMail("team-lead", true)
	if got := mt.next(t); !slices.Equal(got.texts, []string{"while off"}) {
		t.Errorf("after switching on: %q", got.texts)
	}

	// Unbind: no more deliveries.
	b.Unbind("team-lead")
	appendRaw(t, c, "team-lead", ccEntry("arch", "after unbind", "2026-11-25T10:00:05.000Z", "m-6"))
	select {
	case d := <-mt.ch:
		t.Fatalf("delivered after Unbind: %q", d.texts)
	case <-time.After(quiet):
	}
	if st := b.Stats("team-lead"); st.Bound {
		t.Errorf("stats after Unbind = %+v", st)
	}
}

// TestBindKinds: an inbox has one consumer kind at a time.
func TestBindKinds(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	b := newBridge(t, Config{ATM: c, Target: newFakeTarget(ackSent)})
	mt := newMsgTarget(false)
	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"bind a session", func() error { return b.Bind("arch") }, nil},
		{"target on a session's identity", func() error { return b.BindTarget("arch", mt) }, ErrBound},
		{"target on the lead", func() error { return b.BindTarget("team-lead", mt) }, nil},
		{"target again replaces", func() error { return b.BindTarget("team-lead", newMsgTarget(false)) }, nil},
		{"session on the lead's identity", func() error { return b.Bind("team-lead") }, ErrBound},
		{"nil target", func() error { return b.BindTarget("qa", nil) }, errAny},
		{"invalid name", func() error { return b.BindTarget("a/b", mt) }, atmclient.ErrInvalidName},
		{"unbind, then a session", func() error { b.Unbind("team-lead"); return b.Bind("team-lead") }, nil},
	}
	for _, s := range steps {
		err := s.do()
		switch {
		case s.want == nil && err != nil:
			t.Errorf("%s: %v", s.name, err)
		case s.want == errAny && err == nil:
			t.Errorf("%s: no error", s.name)
		case s.want != nil && s.want != errAny && !errors.Is(err, s.want):
			t.Errorf("%s: %v, want %v", s.name, err, s.want)
		}
	}
}

var errAny = errors.New("any error")

// TestFrameMarkRetried: while the inbox is locked by Claude Code (its lock
// directory), a frame handed over cannot be marked read; the failure shows
// in Stats, the next checks mark it once the lock is gone, and OnFrame
// still saw it only once.
func TestFrameMarkRetried(t *testing.T) {
	newHome(t, "arch", "team-lead")
	c, err := atmclient.New(atmclient.Config{LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	appendRaw(t, c, "arch", ccEntry("team-lead", `{"type":"shutdown_request","requestId":"shutdown-9@arch"}`, "2026-11-25T10:00:00.000Z", "m-9"))
	path, err := c.InboxPath("dev", "arch")
	if err != nil {
		t.Fatal(err)
	}
	lockDir := path + ".lock" // inboxes/arch.json.lock, as Claude Code makes it
	if err := os.Mkdir(lockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	fl := newFrameLog()
	b := startBridge(t, Config{ATM: c, Target: newFakeTarget(ackSent), PollInterval: quick, OnFrame: fl.record})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "a failed mark", func() bool { return b.Stats("arch").LastError != "" })
	if got := unreadAll(t, c, "arch"); len(got) != 1 {
		t.Fatalf("unread while locked = %q", got)
	}
	if err := os.Remove(lockDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "the frame marked", func() bool { return len(unreadAll(t, c, "arch")) == 0 })
	waitFor(t, soon, "the error cleared", func() bool { return b.Stats("arch").LastError == "" })
	if diff := cmp.Diff([]string{"arch shutdown_request shutdown-9@arch"}, fl.all()); diff != "" {
		t.Errorf("OnFrame (-want +got):\n%s", diff)
	}
}
