package mailbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/google/go-cmp/cmp"
)

const (
	hour  = time.Hour // a poll interval that never fires in a test
	quick = 20 * time.Millisecond
	soon  = 5 * time.Second // generous bound for something that should take milliseconds
	quiet = 300 * time.Millisecond
)

// texts returns the unescaped texts of the envelope's messages, in order.
func texts(t testing.TB, prompt string) []string {
	t.Helper()
	var out []string
	for _, m := range elemRE.FindAllStringSubmatch(prompt, -1) {
		out = append(out, unescape(m[5]))
	}
	return out
}

func TestNewValidates(t *testing.T) {
	c := newHome(t, "arch")
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{Team: "dev", Target: newFakeTarget(ackSent)}},
		{"no target", Config{ATM: c, Team: "dev"}},
		{"bad team", Config{ATM: c, Team: "../x", Target: newFakeTarget(ackSent)}},
		{"empty team", Config{ATM: c, Target: newFakeTarget(ackSent)}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
	b := newBridge(t, Config{ATM: c, Target: newFakeTarget(ackSent)})
	if err := b.Bind("a/b"); !errors.Is(err, atmclient.ErrInvalidName) {
		t.Errorf("Bind(a/b) = %v, want ErrInvalidName", err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("second Start = %v, want ErrClosed", err)
	}
}

// TestDeliverOnWrite: with the poll an hour away, only the watch can make a
// message written after Bind arrive.
func TestDeliverOnWrite(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	target, rec := newFakeTarget(ackSent), newBatches()
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour, OnBatch: rec.record})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "the first check", func() bool { return !b.Stats("arch").LastCheck.IsZero() })

	m := send(t, c, "arch", "Please review <PR #12> & merge.")
	sent := time.Now()
	d := target.next(t, soon)
	t.Logf("write to Deliver: %v", d.at.Sub(sent))
	if d.identity != "arch" {
		t.Errorf("delivered to %q, want arch", d.identity)
	}
	if !strings.Contains(d.prompt, `id="`+m.MessageID+`"`) || !strings.Contains(d.prompt, "Please review &lt;PR #12&gt; &amp; merge.") {
		t.Errorf("prompt lacks the message:\n%s", d.prompt)
	}
	bt := rec.next(t, soon)
	want := Batch{Identity: "arch", Team: "dev", Keys: []string{m.Key()}, PromptLen: len(d.prompt), Marked: 1}
	if diff := cmp.Diff(want, bt, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "SentAt" }, cmp.Ignore())); diff != "" {
		t.Errorf("batch (-want +got):\n%s", diff)
	}
	if got := unread(t, c, "arch"); len(got) != 0 {
		t.Errorf("unread after delivery = %q, want none", got)
	}
	st := b.Stats("arch")
	if st.Delivered != 1 || st.Batches != 1 || st.Pending != 0 || st.InFlight != 0 || !st.Bound || !st.AutoMail || st.LastDelivery.IsZero() {
		t.Errorf("stats = %+v", st)
	}
	target.none(t, quiet)
}

// TestWatchInboxesCreatedLater: the inboxes directory does not exist when
// the bridge starts; the watch on the team directory sees it appear.
func TestWatchInboxesCreatedLater(t *testing.T) {
	home := t.TempDir()
	t.Setenv("ATM_HOME", home)
	writeTeam(t, home, "dev", false, "arch", "team-lead")
	c, err := atmclient.New(atmclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "the first check", func() bool { return !b.Stats("arch").LastCheck.IsZero() })
	send(t, c, "arch", "first message ever")
	d := target.next(t, soon)
	if got := texts(t, d.prompt); !slices.Equal(got, []string{"first message ever"}) {
		t.Errorf("delivered %q", got)
	}
}

// TestPollSafetyNet: without the watch, the poll delivers.
func TestPollSafetyNet(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: 50 * time.Millisecond, DisableWatch: true})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "the first check", func() bool { return !b.Stats("arch").LastCheck.IsZero() })
	send(t, c, "arch", "found by the poll")
	d := target.next(t, soon)
	if got := texts(t, d.prompt); !slices.Equal(got, []string{"found by the poll"}) {
		t.Errorf("delivered %q", got)
	}
}

// TestIdleTimeoutStopsPoll: after IdleTimeout without mail or activity the
// poll no longer covers an identity (idle_timeout_ms); Idle starts it again.
func TestIdleTimeoutStopsPoll(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: 20 * time.Millisecond, IdleTimeout: 150 * time.Millisecond, DisableWatch: true})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	if !b.Stats("arch").Polling {
		t.Fatal("not polling right after Bind")
	}
	waitFor(t, soon, "the poll to stop", func() bool { return !b.Stats("arch").Polling })
	send(t, c, "arch", "after the idle timeout")
	target.none(t, quiet)
	b.Idle("arch") // activity: checked at once, and the poll resumes
	d := target.next(t, soon)
	if got := texts(t, d.prompt); !slices.Equal(got, []string{"after the idle timeout"}) {
		t.Errorf("delivered %q", got)
	}
	if !b.Stats("arch").Polling {
		t.Error("the poll did not resume after Idle")
	}
}

// TestNoWatchNoPoll: with both the watch off and the poll an hour away a
// new message is not delivered — so the two tests above can fail.
func TestNoWatchNoPoll(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour, DisableWatch: true})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "the first check", func() bool { return !b.Stats("arch").LastCheck.IsZero() })
	send(t, c, "arch", "nobody looks")
	target.none(t, quiet)
	b.Idle("arch") // the post-turn check still works
	target.next(t, soon)
	if st := b.Stats("arch"); st.IdleSkips != 0 {
		t.Errorf("IdleSkips = %d without a watch, want 0", st.IdleSkips)
	}
}

// TestIdleSkipsUnchangedInbox: with the watch on, Idle reads nothing while
// the inbox is unchanged since a read that found no mail; mail that arrives
// during a turn (atm's exchange, or Claude Code's write in place) is still
// delivered by the Idle at the end of the turn.
func TestIdleSkipsUnchangedInbox(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "the first check", func() bool { return !b.Stats("arch").LastCheck.IsZero() })
	checked := b.Stats("arch").LastCheck
	b.Idle("arch")
	target.none(t, quiet)
	if st := b.Stats("arch"); st.IdleSkips != 1 || !st.LastCheck.Equal(checked) {
		t.Fatalf("after Idle on an unchanged empty inbox: IdleSkips = %d, LastCheck moved %v, want 1 and no read",
			st.IdleSkips, st.LastCheck.Sub(checked))
	}

	writes := []struct {
		name  string
		write func(text string)
	}{
		{"atm send", func(text string) { send(t, c, "arch", text) }},
		{"written in place", func(text string) {
			appendRaw(t, c, "arch", map[string]any{"from": "team-lead", "text": text, "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "read": false})
		}},
	}
	for _, w := range writes {
		target.setBusy("arch", true) // a turn runs
		w.write("during the turn: " + w.name)
		waitFor(t, soon, "the watch's check to find the mail", func() bool { return b.Stats("arch").Pending == 1 })
		skips := b.Stats("arch").IdleSkips
		target.setBusy("arch", false)
		b.Idle("arch") // the turn ended
		d := target.next(t, soon)
		if got := texts(t, d.prompt); !slices.Equal(got, []string{"during the turn: " + w.name}) {
			t.Errorf("%s: delivered %q", w.name, got)
		}
		if got := b.Stats("arch").IdleSkips; got != skips {
			t.Errorf("%s: Idle skipped the read of an inbox with mail", w.name)
		}
		waitFor(t, soon, "the mail marked read", func() bool { return len(unread(t, c, "arch")) == 0 })
		target.setBusy("arch", false) // the mail turn ended
		// The mark changed the file; the watch's check after it found
		// nothing, so Idle has nothing to read again.
		waitFor(t, soon, "Idle to skip again", func() bool {
			b.Idle("arch")
			return b.Stats("arch").IdleSkips > skips
		})
	}
	target.none(t, quiet)
}

// TestBurst: 15 messages go out as 10, then 5 after the mail turn ends.
func TestBurst(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	var want []string
	for i := range 15 {
		want = append(want, fmt.Sprintf("message %02d", i))
		send(t, c, "arch", want[i])
	}
	target, rec := newFakeTarget(ackSent), newBatches()
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour, OnBatch: rec.record})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d1 := target.next(t, soon)
	if got := texts(t, d1.prompt); !slices.Equal(got, want[:10]) || !strings.HasPrefix(d1.prompt, `<team-mail count="10"`) {
		t.Fatalf("first batch = %q", got)
	}
	if bt := rec.next(t, soon); len(bt.Keys) != 10 || bt.Marked != 10 {
		t.Errorf("first batch record = %+v", bt)
	}
	if got := unread(t, c, "arch"); !slices.Equal(got, want[10:]) {
		t.Errorf("unread after the first batch = %q", got)
	}
	if st := b.Stats("arch"); st.Pending != 5 || st.Delivered != 10 {
		t.Errorf("stats after the first batch = %+v", st)
	}
	target.none(t, quiet) // the session is busy with the mail turn

	target.setBusy("arch", false)
	b.Idle("arch")
	d2 := target.next(t, soon)
	if got := texts(t, d2.prompt); !slices.Equal(got, want[10:]) {
		t.Fatalf("second batch = %q", got)
	}
	rec.next(t, soon)
	if got := unread(t, c, "arch"); len(got) != 0 {
		t.Errorf("unread at the end = %q", got)
	}
	if st := b.Stats("arch"); st.Pending != 0 || st.Delivered != 15 || st.Batches != 2 {
		t.Errorf("final stats = %+v", st)
	}
}

// TestBusyMarksNothing: a busy session refuses; nothing is marked; the
// post-turn Idle delivers.
func TestBusyMarksNothing(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	target := newFakeTarget(ackSent)
	target.setBusy("arch", true)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	send(t, c, "arch", "while busy")
	waitFor(t, soon, "a refused delivery", func() bool {
		target.mu.Lock()
		defer target.mu.Unlock()
		return target.calls >= 3
	})
	if got := unread(t, c, "arch"); !slices.Equal(got, []string{"while busy"}) {
		t.Errorf("unread while busy = %q", got)
	}
	if st := b.Stats("arch"); st.Pending != 1 || st.Delivered != 0 || st.InFlight != 0 {
		t.Errorf("stats while busy = %+v", st)
	}
	target.setBusy("arch", false)
	b.Idle("arch")
	target.next(t, soon)
	waitFor(t, soon, "mark read", func() bool { return len(unread(t, c, "arch")) == 0 })
}

// TestUnsentThenRestart: Target never reports the batch sent; nothing is
// marked, the batch is not offered twice by the same bridge, and a new
// bridge (a restarted proxy) delivers it again.
func TestUnsentThenRestart(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	m := send(t, c, "arch", "deliver me at least once")

	target1 := newFakeTarget(ackNever)
	b1 := startBridge(t, Config{ATM: c, Target: target1, PollInterval: quick})
	if err := b1.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d1 := target1.next(t, soon)
	target1.setBusy("arch", false) // even an idle session does not get it twice
	b1.Idle("arch")
	target1.none(t, quiet)
	if got := unread(t, c, "arch"); len(got) != 1 {
		t.Fatalf("unread before restart = %q", got)
	}
	if st := b1.Stats("arch"); st.InFlight != 1 || st.Delivered != 0 {
		t.Errorf("stats = %+v", st)
	}
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	d1.done(true) // after Close: too late, must not mark
	if got := unread(t, c, "arch"); len(got) != 1 {
		t.Fatalf("unread after a done after Close = %q", got)
	}

	target2 := newFakeTarget(ackAsync)
	b2 := startBridge(t, Config{ATM: c, Target: target2, PollInterval: hour})
	if err := b2.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d2 := target2.next(t, soon)
	if !strings.Contains(d2.prompt, `id="`+m.MessageID+`"`) || d2.prompt != d1.prompt {
		t.Errorf("redelivery differs:\n%s\nfirst:\n%s", d2.prompt, d1.prompt)
	}
	waitFor(t, soon, "mark read", func() bool { return len(unread(t, c, "arch")) == 0 })
}

// TestSentFalse: done(false) leaves the mail unread for the next check.
func TestSentFalse(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	send(t, c, "arch", "write failed")
	target := newFakeTarget(ackFail)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	target.next(t, soon)
	target.none(t, quiet) // no immediate retry
	if got := unread(t, c, "arch"); len(got) != 1 {
		t.Fatalf("unread = %q", got)
	}
	target.mu.Lock()
	target.mode, target.busy["arch"] = ackSent, false
	target.mu.Unlock()
	b.Idle("arch")
	target.next(t, soon)
	waitFor(t, soon, "mark read", func() bool { return len(unread(t, c, "arch")) == 0 })
}

// TestAckTimeout: a batch never settled is offered again after AckTimeout,
// and a late done(true) still marks it.
func TestAckTimeout(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	send(t, c, "arch", "lost ack")
	target := newFakeTarget(ackNever)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick, AckTimeout: 100 * time.Millisecond})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d1 := target.next(t, soon)
	target.setBusy("arch", false)
	d2 := target.next(t, soon)
	if d2.prompt != d1.prompt {
		t.Errorf("second offer differs")
	}
	d1.done(true)
	waitFor(t, soon, "mark read", func() bool { return len(unread(t, c, "arch")) == 0 })
	d2.done(true)
	waitFor(t, soon, "stats", func() bool { st := b.Stats("arch"); return st.Batches == 2 && st.InFlight == 0 })
}

// TestClaudeCodeMail: an id-less message (Claude Code's format) is
// delivered once with its stable key and marked read; idle notifications
// are neither delivered nor marked.
func TestClaudeCodeMail(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	idle := `{"type":"idle_notification","from":"team-lead","timestamp":"2026-02-11T14:29:00.000Z","idleReason":"available"}`
	appendRaw(t, c, "arch",
		map[string]any{"from": "team-lead", "text": idle, "timestamp": "2026-02-11T14:29:00.000Z", "read": false},
		map[string]any{"from": "team-lead", "text": "Can you add rate limiting?", "summary": "rate limiting", "timestamp": "2026-02-11T14:30:00.000Z", "color": "blue", "read": false},
		map[string]any{"from": "team-lead", "text": `{"type":"shutdown_request","requestId":"r1"}`, "timestamp": "2026-02-11T14:31:00.000Z"},
	)
	target, rec := newFakeTarget(ackSent), newBatches()
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick, OnBatch: rec.record})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d := target.next(t, soon)
	if got := texts(t, d.prompt); !slices.Equal(got, []string{"Can you add rate limiting?"}) {
		t.Errorf("delivered %q", got)
	}
	if strings.Contains(d.prompt, "idle_notification") || strings.Contains(d.prompt, "shutdown_request") {
		t.Errorf("protocol message delivered:\n%s", d.prompt)
	}
	bt := rec.next(t, soon)
	if len(bt.Keys) != 1 || !strings.HasPrefix(bt.Keys[0], "sum:") || !strings.Contains(d.prompt, `id="`+bt.Keys[0]+`"`) {
		t.Errorf("batch keys %q, prompt:\n%s", bt.Keys, d.prompt)
	}
	var got []string
	for _, m := range inbox(t, c, "arch") {
		got = append(got, fmt.Sprintf("%s read=%t", m.Text[:min(len(m.Text), 20)], m.Read))
	}
	want := []string{`{"type":"idle_notifi read=false`, "Can you add rate lim read=true", `{"type":"shutdown_re read=false`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inbox after delivery (-want +got):\n%s", diff)
	}
	target.setBusy("arch", false)
	b.Idle("arch")
	target.none(t, quiet) // delivered once, and protocol messages never
}

// TestUnboundStaysUnread: mail to an identity nobody holds is not
// delivered, even when its inbox changes under the watch.
func TestUnboundStaysUnread(t *testing.T) {
	c := newHome(t, "arch", "qa", "team-lead")
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick})
	if err := b.Bind("qa"); err != nil {
		t.Fatal(err)
	}
	send(t, c, "arch", "for nobody")
	b.Idle("arch") // ignored: not bound
	target.none(t, quiet)
	if got := unread(t, c, "arch"); len(got) != 1 {
		t.Errorf("unread = %q", got)
	}
	if st := b.Stats("arch"); st.Bound || st.Pending != 0 {
		t.Errorf("stats of an unbound identity = %+v", st)
	}
}

// TestUnbind: after Unbind nothing more is delivered; Bind again delivers.
func TestUnbind(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	send(t, c, "arch", "one")
	target.next(t, soon)
	waitFor(t, soon, "mark read", func() bool { return len(unread(t, c, "arch")) == 0 })
	b.Unbind("arch")
	target.setBusy("arch", false)
	send(t, c, "arch", "two")
	b.Idle("arch")
	target.none(t, quiet)
	if got := unread(t, c, "arch"); !slices.Equal(got, []string{"two"}) {
		t.Errorf("unread after Unbind = %q", got)
	}
	if st := b.Stats("arch"); st.Bound || st.Delivered != 1 {
		t.Errorf("stats after Unbind = %+v", st)
	}
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	if got := texts(t, target.next(t, soon).prompt); !slices.Equal(got, []string{"two"}) {
		t.Errorf("after rebinding delivered %q", got)
	}
}

// TestUnbindInFlight: a batch handed over before Unbind is still marked
// when Target reports it sent.
func TestUnbindInFlight(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	send(t, c, "arch", "in flight")
	target := newFakeTarget(ackNever)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d := target.next(t, soon)
	b.Unbind("arch")
	d.done(true)
	waitFor(t, soon, "mark read", func() bool { return len(unread(t, c, "arch")) == 0 })
}

// TestAutoMailSwitches: per identity and global switches stop delivery
// but not the pending count.
func TestAutoMailSwitches(t *testing.T) {
	t.Run("per identity", func(t *testing.T) {
		c := newHome(t, "arch", "team-lead")
		target := newFakeTarget(ackSent)
		b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick})
		b.SetAutoMail("arch", false)
		if err := b.Bind("arch"); err != nil {
			t.Fatal(err)
		}
		send(t, c, "arch", "held")
		waitFor(t, soon, "pending", func() bool { return b.Stats("arch").Pending == 1 })
		target.none(t, quiet)
		if st := b.Stats("arch"); st.AutoMail {
			t.Errorf("AutoMail reported on")
		}
		b.SetAutoMail("arch", true)
		target.next(t, soon)
	})
	t.Run("global", func(t *testing.T) {
		c := newHome(t, "arch", "team-lead")
		target := newFakeTarget(ackSent)
		b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick, Disabled: true})
		if err := b.Bind("arch"); err != nil {
			t.Fatal(err)
		}
		send(t, c, "arch", "held")
		waitFor(t, soon, "pending", func() bool { return b.Stats("arch").Pending == 1 })
		b.SetAutoMail("arch", true)
		target.none(t, quiet)
		if got := unread(t, c, "arch"); len(got) != 1 {
			t.Errorf("unread = %q", got)
		}
	})
}

// TestTruncatedBatch: MaxMessages and MaxMessageLength from Config reach
// the envelope and the audit record.
func TestTruncatedBatch(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	send(t, c, "arch", strings.Repeat("é", 30))
	send(t, c, "arch", "short")
	send(t, c, "arch", "third")
	target, rec := newFakeTarget(ackSent), newBatches()
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour, MaxMessages: 2, MaxMessageLength: 8, OnBatch: rec.record})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d := target.next(t, soon)
	if got, want := texts(t, d.prompt), []string{strings.Repeat("é", 8) + "\n[truncated: 8 of 30 characters shown]", "short"}; !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
	if bt := rec.next(t, soon); bt.Truncated != 1 || len(bt.Keys) != 2 {
		t.Errorf("batch = %+v", bt)
	}
}

// TestReadErrorReported: a corrupt inbox is reported in Stats and left
// alone; fixing it lets mail through.
func TestReadErrorReported(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	path, _ := c.InboxPath("dev", "arch")
	if err := os.WriteFile(path, []byte(`{"not":"an array"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: quick})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "an error in Stats", func() bool { return b.Stats("arch").LastError != "" })
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	send(t, c, "arch", "after the fix")
	target.next(t, soon)
	waitFor(t, soon, "error cleared", func() bool { return b.Stats("arch").LastError == "" })
}

// TestCloseMarksSent: Close waits for the mark of a batch already sent.
func TestCloseMarksSent(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	send(t, c, "arch", "sent just before close")
	release := make(chan struct{})
	target, rec := newFakeTarget(ackNever), newBatches()
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour, OnBatch: func(bt Batch) {
		<-release
		rec.record(bt)
	}})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	d := target.next(t, soon)
	d.done(true)
	close(release)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := unread(t, c, "arch"); len(got) != 0 {
		t.Errorf("unread after Close = %q", got)
	}
	if bt := rec.next(t, time.Millisecond); bt.Err != nil || bt.Marked != 1 {
		t.Errorf("batch = %+v", bt)
	}
}

// TestManyIdentities: each bound identity gets its own mail, and only it.
func TestManyIdentities(t *testing.T) {
	ids := []string{"a1", "a2", "a3", "a4", "a5"}
	c := newHome(t, append([]string{"team-lead"}, ids...)...)
	target := newFakeTarget(ackAsync)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour})
	for _, id := range ids {
		if err := b.Bind(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		send(t, c, id, "for "+id)
	}
	got := map[string][]string{}
	for range ids {
		d := target.next(t, soon)
		got[d.identity] = texts(t, d.prompt)
	}
	for _, id := range ids {
		if !slices.Equal(got[id], []string{"for " + id}) {
			t.Errorf("%s got %q", id, got[id])
		}
	}
	for _, id := range ids {
		waitFor(t, soon, "mark read", func() bool { return len(unread(t, c, id)) == 0 })
	}
}

// TestInboxesDirRecreated: the watch survives the inboxes directory being
// removed and made again.
func TestInboxesDirRecreated(t *testing.T) {
	c := newHome(t, "arch", "team-lead")
	target := newFakeTarget(ackSent)
	b := startBridge(t, Config{ATM: c, Target: target, PollInterval: hour})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.Home(), ".claude", "teams", "dev", "inboxes")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	send(t, c, "arch", "after the directory came back")
	target.next(t, soon)
}

// TestMissingTeamSaidOnce: a team that does not exist is said once in the
// log with what to do, not at every poll.
func TestMissingTeamSaidOnce(t *testing.T) {
	c := newHome(t, "arch")
	var logged strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), nil))
	b := startBridge(t, Config{ATM: c, Team: "nobody", Target: newFakeTarget(ackSent), PollInterval: 20 * time.Millisecond, DisableWatch: true, Logger: log})
	if err := b.Bind("arch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, soon, "several polls", func() bool { return strings.Contains(b.Stats("arch").LastError, "team not found") })
	time.Sleep(200 * time.Millisecond) // about ten more polls
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logged.String(), "could not read inbox"); n != 1 || !strings.Contains(logged.String(), "the team does not exist") {
		t.Errorf("%d warnings about the missing team, want 1 that says what to do:\n%s", n, logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
