package atmclient

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// clobber rewrites path in place with data.
func clobber(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func journalPath(path string) string { return strings.TrimSuffix(path, ".json") + ".journal" }
func tmpPath(path string) string     { return strings.TrimSuffix(path, ".json") + ".tmp" }

// send sends text from a to a and fails the test on error.
func send(t *testing.T, c *Client, text string) Message {
	t.Helper()
	m, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func repair(t *testing.T, c *Client, want int) {
	t.Helper()
	n, err := c.Repair(bg, "dev", "a")
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("Repair restored %d messages, want %d", n, want)
	}
}

// crashAt runs op and then puts the inbox, its tmp file and its journal
// back as they were when op's write reached step ("journaled": after the
// journal, before the exchange; "checked": after the exchange), and leaves
// the lock directory behind, aged past staleness: the state a writer
// killed at that step leaves (the kill releases its flock).
func crashAt(t *testing.T, path, step string, op func()) {
	t.Helper()
	files := []string{path, tmpPath(path), journalPath(path)}
	var saved [][]byte
	setHook(t, func(s string) {
		if s != step || saved != nil {
			return
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if errors.Is(err, fs.ErrNotExist) {
				b = nil
			} else if err != nil {
				t.Fatal(err)
			}
			saved = append(saved, b)
		}
	})
	op()
	testHook = nil
	if saved == nil {
		t.Fatalf("the write never reached %q", step)
	}
	for i, f := range files {
		if saved[i] == nil {
			os.Remove(f)
		} else {
			clobber(t, f, saved[i])
		}
	}
	lockDir := path + ".lock"
	if err := os.Mkdir(lockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-11 * time.Second)
	os.Chtimes(lockDir, old, old)
}

// A writer killed after its journal record and before its exchange: the
// next locked write (here Repair, a Send, a MarkRead) delivers the message,
// once, taking over the dead writer's lock directory.
func TestReplayUnfinishedSend(t *testing.T) {
	for _, by := range []string{"repair", "send", "mark-read"} {
		t.Run(by, func(t *testing.T) {
			c, _ := newTestHome(t, "a")
			c.now = fixedClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
			path := inboxPath(t, c, "dev", "a")
			m1 := send(t, c, "one")
			crashAt(t, path, "journaled", func() { send(t, c, "two") })
			if diff := cmp.Diff([]string{"one"}, texts(t, c, "a")); diff != "" {
				t.Fatalf("after the crash (-want +got):\n%s", diff)
			}
			want := []string{"one", "two"}
			switch by {
			case "repair":
				repair(t, c, 1)
			case "send":
				send(t, c, "three")
				want = append(want, "three")
			case "mark-read":
				if n, err := c.MarkRead(bg, "dev", "a", m1.Key()); err != nil || n != 1 {
					t.Fatalf("MarkRead = %d, %v; want 1", n, err)
				}
			}
			if diff := cmp.Diff(want, texts(t, c, "a")); diff != "" {
				t.Errorf("after the %s (-want +got):\n%s", by, diff)
			}
			if n, _ := c.Pending(bg, "dev", "a"); n != len(want)-map[bool]int{true: 1}[by == "mark-read"] {
				t.Errorf("Pending = %d after the %s", n, by)
			}
			repair(t, c, 0)
			if _, err := os.Stat(path + ".lock"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("lock directory after the writes: %v, want it gone", err)
			}
		})
	}
}

// A MarkRead killed before its exchange is finished by the next write, but
// only for messages still there: one consumed meanwhile stays consumed.
func TestReplayUnfinishedMarkRead(t *testing.T) {
	c, _ := newTestHome(t, "a")
	c.now = fixedClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	path := inboxPath(t, c, "dev", "a")
	m1, m2 := send(t, c, "one"), send(t, c, "two")
	crashAt(t, path, "journaled", func() {
		if _, err := c.MarkRead(bg, "dev", "a", m1.Key(), m2.Key()); err != nil {
			t.Fatal(err)
		}
	})
	claudeConsume(t, path, "two")
	repair(t, c, 1)
	res, err := c.Read(bg, "dev", "a", ReadOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Text != "one" || !res.Messages[0].Read {
		t.Errorf("inbox after Repair = %+v; want only \"one\", read", res.Messages)
	}
}

// claudeConsume removes the entries with these texts under Claude Code's
// lock, as its reader does after delivering them.
func claudeConsume(t *testing.T, path string, texts ...string) {
	t.Helper()
	unlock, err := claudeLock(bg, path+".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	entries, err := claudeReadInbox(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []claudeEntry
	for _, e := range entries {
		if !strings.Contains("\x00"+strings.Join(texts, "\x00")+"\x00", "\x00"+e.str("text")+"\x00") {
			keep = append(keep, e)
		}
	}
	if err := claudeAtomicWrite(path, keep); err != nil {
		t.Fatal(err)
	}
}

// A writer killed after its exchange delivered its message. When the
// message is consumed before the next write, the journal record must not
// bring it back: a removal under Claude Code's lock is a consumption.
func TestNoReplayAfterExchange(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	send(t, c, "one")
	crashAt(t, path, "checked", func() { send(t, c, "two") })
	if _, err := os.Stat(tmpPath(path)); err != nil {
		t.Fatalf("the crash left no displaced file: %v", err)
	}
	os.Remove(path + ".lock") // Claude Code takes over the stale lock
	claudeConsume(t, path, "one", "two")
	repair(t, c, 0)
	send(t, c, "three")
	if diff := cmp.Diff([]string{"three"}, texts(t, c, "a")); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
}

// Consumed mail never comes back through the journal: after every write
// the consumer removes what it delivered, and the next write does not put
// it back.
func TestConsumedStaysConsumed(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	var sent []string
	for i := range 5 {
		m := send(t, c, "m"+string(rune('0'+i)))
		sent = append(sent, m.Text)
		claudeConsume(t, path, sent...)
		repair(t, c, 0)
		if got := texts(t, c, "a"); len(got) != 0 {
			t.Fatalf("after consuming everything, the inbox holds %q", got)
		}
	}
}

// A journal whose record was cut short by a kill is ignored.
func TestJournalTornRecord(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	send(t, c, "one")
	crashAt(t, path, "journaled", func() { send(t, c, "two") })
	j := mustRead(t, journalPath(path))
	clobber(t, journalPath(path), j[:len(j)/2])
	repair(t, c, 0)
	if diff := cmp.Diff([]string{"one"}, texts(t, c, "a")); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
}

// The journal holds one record, the last write's, whatever the number of
// writes.
func TestJournalOneRecord(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	for i := range 20 {
		send(t, c, strings.Repeat("x", i+1))
	}
	j := mustRead(t, journalPath(path))
	if n := strings.Count(string(j), "\n"); n != 1 || !strings.Contains(string(j), `"text":"xxxxxxxxxxxxxxxxxxxx"`) {
		t.Errorf("journal = %s; want one line, the last Send", j)
	}
	if _, err := os.Stat(tmpPath(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("tmp file after the writes: %v, want none", err)
	}
}
