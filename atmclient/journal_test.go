package atmclient

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// clobber rewrites path in place with data, the way a lock-ignoring writer
// puts back the stale copy it read.
func clobber(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func journalPath(path string) string { return strings.TrimSuffix(path, ".json") + ".journal" }

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

// The window, case 3, repaired: a stale in-place rewrite after our swap
// takes our message out; Repair (or any later locked write) puts it back,
// in timestamp order, and a second Repair finds nothing to do.
func TestRepairStaleOverwrite(t *testing.T) {
	for _, by := range []string{"repair", "send", "mark-read"} {
		t.Run(by, func(t *testing.T) {
			c, _ := newTestHome(t, "a")
			c.now = fixedClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
			path := inboxPath(t, c, "dev", "a")
			send(t, c, "one")
			stale := mustRead(t, path)
			send(t, c, "two")
			m3 := send(t, c, "three")
			clobber(t, path, stale) // "two" and "three" are gone
			if diff := cmp.Diff([]string{"one"}, texts(t, c, "a")); diff != "" {
				t.Fatalf("after the clobber (-want +got):\n%s", diff)
			}
			switch by {
			case "repair":
				repair(t, c, 2)
			case "send":
				send(t, c, "four")
			case "mark-read":
				if n, err := c.MarkRead(bg, "dev", "a", m3.Key()); err != nil || n != 1 {
					t.Fatalf("MarkRead = %d, %v; want 1 (the restored message)", n, err)
				}
			}
			want := []string{"one", "two", "three"}
			if by == "send" {
				want = append(want, "four")
			}
			if diff := cmp.Diff(want, texts(t, c, "a")); diff != "" {
				t.Errorf("after the %s (-want +got):\n%s", by, diff)
			}
			repair(t, c, 0)
		})
	}
}

// The single-process reproduction of the window (merge_test.go), now
// followed by the repair.
func TestRepairAfterWindow(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	os.WriteFile(path, []byte("[]"), 0o644)
	var stale []byte
	setHook(t, func(step string) {
		switch step {
		case "swap":
			stale = mustRead(t, path)
		case "checked":
			if stale != nil {
				os.WriteFile(path, []byte(strings.TrimSuffix(string(stale), "]")+`{"from": "claude", "text": "claude", "timestamp": "2026-01-01T00:00:00Z"}]`), 0o644)
				stale = nil
			}
		}
	})
	send(t, c, "ours")
	testHook = nil
	if diff := cmp.Diff([]string{"claude"}, texts(t, c, "a")); diff != "" {
		t.Fatalf("after the stale rewrite (-want +got):\n%s", diff)
	}
	repair(t, c, 1)
	if diff := cmp.Diff([]string{"claude", "ours"}, texts(t, c, "a")); diff != "" {
		t.Errorf("after Repair (-want +got):\n%s", diff)
	}
}

// A lock-ignoring message we merged is journaled too: when a stale rewrite
// drops it right after the merge exchange (the window, case 3 with a merge
// exchange), it comes back.
func TestRepairMergedMessage(t *testing.T) {
	c, _ := newTestHome(t, "a")
	c.now = fixedClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	path := inboxPath(t, c, "dev", "a")
	os.WriteFile(path, []byte("[]"), 0o644)
	swaps, checks := 0, 0
	var stale []byte
	setHook(t, func(step string) {
		switch step {
		case "swap":
			swaps++
			switch swaps {
			case 1: // X lands between our read and our first exchange: merged.
				claudeWrite(t, path, "x", "2026-01-01T00:00:00.000Z")
			case 2: // W reads our first exchange, which lacks X...
				stale = mustRead(t, path)
			}
		case "checked":
			if checks++; checks == 2 { // ...and writes it back after the merge exchange.
				os.WriteFile(path, []byte(strings.TrimSuffix(string(stale), "\n]")+",\n  "+`{"from": "claude", "text": "y", "timestamp": "2026-01-01T00:00:01.000Z", "read": false}`+"\n]"), 0o644)
			}
		}
	})
	send(t, c, "ours")
	testHook = nil
	if diff := cmp.Diff([]string{"ours", "y"}, texts(t, c, "a")); diff != "" {
		t.Fatalf("after the stale rewrite (-want +got):\n%s", diff)
	}
	repair(t, c, 1)
	if diff := cmp.Diff([]string{"x", "y", "ours"}, texts(t, c, "a")); diff != "" {
		t.Errorf("after Repair (-want +got):\n%s", diff)
	}
}

// Read flags set through this package are journaled: a stale rewrite that
// resets one is undone, a message it removed comes back read, and a message
// marked read by another writer is never marked unread.
func TestRepairReadFlag(t *testing.T) {
	c, _ := newTestHome(t, "a")
	c.now = fixedClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	path := inboxPath(t, c, "dev", "a")
	m1 := send(t, c, "one")
	m2 := send(t, c, "two")
	send(t, c, "three")
	stale := mustRead(t, path) // all unread
	if _, err := c.MarkRead(bg, "dev", "a", m1.Key(), m2.Key()); err != nil {
		t.Fatal(err)
	}
	// The stale copy resets the flags and drops m2; another writer marks
	// m3 read (in place, like atm read).
	s := string(stale)
	i := strings.Index(s, `{`+"\n"+`    "from": "a",`+"\n"+`    "source_team": "dev",`+"\n"+`    "text": "two"`)
	j := strings.Index(s, `{`+"\n"+`    "from": "a",`+"\n"+`    "source_team": "dev",`+"\n"+`    "text": "three"`)
	if i < 0 || j < 0 {
		t.Fatalf("unexpected inbox layout:\n%s", s)
	}
	s = s[:i] + strings.Replace(s[j:], `"read": false`, `"read": true`, 1)
	clobber(t, path, []byte(s))
	repair(t, c, 2)
	res, err := c.Read(bg, "dev", "a", ReadOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range res.Messages {
		got[m.Text] = m.Read
	}
	if diff := cmp.Diff(map[string]bool{"one": true, "two": true, "three": true}, got); diff != "" {
		t.Errorf("read flags after Repair (-want +got):\n%s", diff)
	}
	if n, _ := c.Pending(bg, "dev", "a"); n != 0 {
		t.Errorf("Pending = %d, want 0", n)
	}
}

// A journal record whose message never reached the inbox (the writer died
// between the journal and the exchange) is replayed once: the message is
// delivered, and never twice.
func TestRepairReplaysJournalOnly(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	send(t, c, "delivered")
	m := Message{From: "a", SourceTeam: "dev", Text: "journaled only", Timestamp: time.Now().UTC().Format(TimestampLayout), MessageID: newUUID()}
	e, err := entryFor(m)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(journalPath(path), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(encodeRecord(nil, time.Now(), e))
	// Another layout of a record is read too.
	m2 := m
	m2.Text, m2.MessageID = "journaled in another layout", newUUID()
	b, _ := m2.MarshalJSON()
	fmt.Fprintf(f, "{ \"message\": %s, \"at\": %q }\n", b, time.Now().Format(time.RFC3339Nano))
	f.Close()
	repair(t, c, 2)
	repair(t, c, 0)
	c2, _ := New(Config{}) // a cold cache reads the whole journal
	if n, err := c2.Repair(bg, "dev", "a"); err != nil || n != 0 {
		t.Errorf("Repair by a new client = %d, %v; want 0", n, err)
	}
	if diff := cmp.Diff([]string{"delivered", "journaled only", "journaled in another layout"}, texts(t, c, "a")); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
}

// A journal that ends in an incomplete record (a writer killed in the
// middle of appending) is still read, and appended to on a line of its own.
func TestJournalTornRecord(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	send(t, c, "one")
	f, err := os.OpenFile(journalPath(path), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"at":"2026-03-01T00:00:00Z","message":{"from":"a","te`)
	f.Close()
	stale := mustRead(t, path)
	send(t, c, "two")
	send(t, c, "three")
	for _, cl := range []*Client{c, mustNew(t)} {
		clobber(t, path, stale)
		repair(t, cl, 2)
		if diff := cmp.Diff([]string{"one", "two", "three"}, texts(t, c, "a")); diff != "" {
			t.Errorf("after Repair (-want +got):\n%s", diff)
		}
	}
	lines := bytes.Split(bytes.TrimSuffix(mustRead(t, journalPath(path)), []byte("\n")), []byte("\n"))
	if len(lines) < 4 || !bytes.HasSuffix(lines[1], []byte(`"te`)) {
		t.Errorf("journal lines = %q, want the incomplete record on a line of its own", lines)
	}
}

func mustNew(t *testing.T) *Client {
	t.Helper()
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// setJournalLimits shrinks the journal limits for one test.
func setJournalLimits(t *testing.T, maxLive, compactMin int) {
	oldLive, oldMin := journalMaxLive, journalCompactMin
	journalMaxLive, journalCompactMin = maxLive, compactMin
	t.Cleanup(func() { journalMaxLive, journalCompactMin = oldLive, oldMin })
}

// The journal stays bounded: past journalCompactMin it is rewritten with
// only its live records whenever less than half of it is live, and only
// live records are repaired — the residual window: a stale rewrite of a
// message whose record is older than the retention, or behind more than
// journalMaxLive bytes of newer records, is not undone.
func TestJournalBounded(t *testing.T) {
	setJournalLimits(t, 2000, 4000)
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	maxSize := 0
	for i := range 60 {
		send(t, c, "message "+string(rune('A'+i%26))+string(rune('a'+i/26)))
		maxSize = max(maxSize, len(mustRead(t, journalPath(path))))
	}
	// One record is about 260 bytes: a little over 2×2000 bytes at most.
	if maxSize > 2*2000+400 || maxSize < 2000 {
		t.Errorf("journal grew to %d bytes, want at most about %d", maxSize, 2*2000+400)
	}
	// Live: the newest records within 2000 bytes, about 7 of them.
	stale := mustRead(t, path)
	var recent []string
	for i := range 10 {
		recent = append(recent, send(t, c, "recent "+string(rune('a'+i))).Text)
	}
	clobber(t, path, stale)
	n, err := c.Repair(bg, "dev", "a")
	if err != nil {
		t.Fatal(err)
	}
	got := texts(t, c, "a")
	if n < 5 || n > 9 || len(got) != 60+n {
		t.Fatalf("Repair restored %d of 10 (inbox %d messages), want the 5 to 9 newest", n, len(got))
	}
	if diff := cmp.Diff(recent[10-n:], got[60:]); diff != "" {
		t.Errorf("restored (-want +got):\n%s", diff)
	}
}

// Records older than the retention are not repaired, younger ones are.
func TestJournalRetention(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	now := time.Now()
	c.journalNow = func() time.Time { return now }
	send(t, c, "old")
	now = now.Add(journalRetention / 2)
	send(t, c, "young")
	now = now.Add(journalRetention/2 + time.Second) // "old" expired, "young" not
	clobber(t, path, []byte("[]"))
	repair(t, c, 1)
	if diff := cmp.Diff([]string{"young"}, texts(t, c, "a")); diff != "" {
		t.Errorf("after Repair (-want +got):\n%s", diff)
	}
}

// Two clients in turn: each picks up the records the other appended and
// survives the other's compactions.
func TestJournalTwoClients(t *testing.T) {
	setJournalLimits(t, 3000, 1500)
	c1, _ := newTestHome(t, "a")
	c2 := mustNew(t)
	path := inboxPath(t, c1, "dev", "a")
	clobber(t, path, []byte("[]"))
	var want []string
	var last os.FileInfo
	compactions := 0
	for i := range 40 {
		if fi, err := os.Stat(journalPath(path)); err == nil {
			if last != nil && !os.SameFile(fi, last) {
				compactions++
			}
			last = fi
		}
		c := []*Client{c1, c2}[i%2]
		stale := mustRead(t, path)
		m := send(t, c, "m"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		want = append(want, m.Text)
		if i%5 == 4 {
			clobber(t, path, stale) // drops m
			repair(t, []*Client{c2, c1}[i%2], 1)
		}
	}
	if diff := cmp.Diff(want, texts(t, c1, "a")); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
	if compactions < 2 {
		t.Errorf("journal compacted %d times, want at least 2", compactions)
	}
}
