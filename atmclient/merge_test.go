package atmclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// setHook installs testHook for one test; f sees each step once per write.
func setHook(t *testing.T, f func(step string)) {
	t.Cleanup(func() { testHook = nil })
	testHook = f
}

// claudeWrite rewrites path in place (truncate and write, no lock) with its
// current content plus one id-less message, the way Claude Code appends.
func claudeWrite(t *testing.T, path, text, ts string) {
	t.Helper()
	old := strings.TrimSpace(string(mustRead(t, path)))
	elem := `{"from": "claude", "text": "` + text + `", "timestamp": "` + ts + `", "read": false}`
	var out string
	if old == "[]" {
		out = "[\n  " + elem + "\n]"
	} else {
		out = strings.TrimSuffix(old, "]") + ",\n  " + elem + "\n]"
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

func texts(t *testing.T, c *Client, agent string) []string {
	t.Helper()
	res, err := c.Read(bg, "dev", agent, ReadOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, m := range res.Messages {
		s = append(s, m.Text)
	}
	return s
}

// A lock-ignoring write between our read and our swap is merged, sorted by
// timestamp instant.
func TestMergeWriteBeforeSwap(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	os.WriteFile(path, []byte(`[{"from": "x", "text": "old", "timestamp": "2026-01-01T00:00:00Z"}]`), 0o644)
	once := false
	setHook(t, func(step string) {
		if step == "swap" && !once {
			once = true
			claudeWrite(t, path, "claude", "2026-01-01T00:00:00.500+00:00")
		}
	})
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "ours"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"old", "claude", "ours"}, texts(t, c, "a")); diff != "" {
		t.Errorf("inbox mismatch (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(strings.TrimSuffix(path, ".json") + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("tmp file left behind: %v", err)
	}
}

// A lock-ignoring writer that creates the inbox after we found none is
// merged too (the rename refuses to replace, we swap instead).
func TestMergeCreatedConcurrently(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	once := false
	setHook(t, func(step string) {
		if step == "swap" && !once {
			once = true
			os.WriteFile(path, []byte("[]"), 0o644)
			claudeWrite(t, path, "claude", "2000-01-01T00:00:00.000Z")
		}
	})
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "ours"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"claude", "ours"}, texts(t, c, "a")); diff != "" {
		t.Errorf("inbox mismatch (-want +got):\n%s", diff)
	}
}

// A displaced file that cannot be parsed is kept aside, and ours stays.
func TestMergeUnparsableKeptAside(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	os.WriteFile(path, []byte("[]"), 0o644)
	once := false
	setHook(t, func(step string) {
		if step == "swap" && !once {
			once = true
			os.WriteFile(path, []byte("[{garbage"), 0o644)
		}
	})
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "ours"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ours"}, texts(t, c, "a")); diff != "" {
		t.Errorf("inbox mismatch (-want +got):\n%s", diff)
	}
	aside, _ := filepath.Glob(path + ".unmerged-*")
	if len(aside) != 1 || string(mustRead(t, aside[0])) != "[{garbage" {
		t.Errorf("unmerged files = %v, want one holding the garbage", aside)
	}
}

// The documented window, case 3: a writer that takes no lock, read before
// our swap and writes after it replaces our message with its stale copy.
// Nothing brings it back: once Claude Code's lock is taken too, a message
// that disappears was consumed, and no known writer writes without a lock.
func TestWindowStaleOverwriteLosesOurs(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	os.WriteFile(path, []byte("[]"), 0o644)
	var stale []byte
	setHook(t, func(step string) {
		switch step {
		case "swap":
			stale = mustRead(t, path) // W reads before the swap...
		case "checked":
			if stale != nil { // ...and writes after it.
				os.WriteFile(path, []byte(strings.TrimSuffix(string(stale), "]")+`{"from": "claude", "text": "claude", "timestamp": "2026-01-01T00:00:00Z"}]`), 0o644)
				stale = nil
			}
		}
	})
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "ours"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"claude"}, texts(t, c, "a")); diff != "" {
		t.Errorf("inbox mismatch (-want +got):\n%s", diff)
	}
}

// The documented window, case 4: a writer that opened the file before our
// swap and writes after our check writes into the displaced inode; its
// message is lost and ours stays.
func TestWindowLateWriteToDisplacedLost(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	os.WriteFile(path, []byte("[]"), 0o644)
	var f *os.File
	setHook(t, func(step string) {
		switch step {
		case "swap":
			if f == nil {
				var err error
				if f, err = os.OpenFile(path, os.O_WRONLY, 0); err != nil {
					t.Fatal(err)
				}
			}
		case "checked":
			if f != nil {
				f.WriteString(`[{"from": "claude", "text": "claude", "timestamp": "2026-01-01T00:00:00Z"}]`)
				f.Close()
			}
		}
	})
	if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "a", Text: "ours"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ours"}, texts(t, c, "a")); diff != "" {
		t.Errorf("inbox mismatch (-want +got):\n%s", diff)
	}
}

func TestMergeEntries(t *testing.T) {
	mk := func(s string) *entry { return newEntry([]byte(s)) }
	ours := []*entry{
		mk(`{"from": "a", "text": "1", "timestamp": "2026-01-01T00:00:01Z", "message_id": "m1"}`),
		mk(`{"from": "c", "text": "3", "timestamp": "2026-01-01T00:00:03Z"}`),
	}
	theirs := []*entry{
		mk(`{"from": "a", "text": "changed", "timestamp": "2026-01-01T00:00:01Z", "message_id": "m1"}`), // same id
		mk(`{"from": "c", "text": "3", "timestamp": "2026-01-01T00:00:03.000+00:00", "read": true}`),    // same instant
		mk(`{"from": "b", "text": "2", "timestamp": "2026-01-01T00:00:02Z"}`),                           // new
		mk(`7`), // not a message, new
	}
	merged, added := mergeEntries(ours, theirs)
	var got []string
	for _, e := range merged {
		got = append(got, strings.Join(strings.Fields(string(e.raw)), " "))
	}
	want := []string{
		`7`,
		`{ "from": "a", "text": "1", "timestamp": "2026-01-01T00:00:01Z", "message_id": "m1" }`,
		`{ "from": "b", "text": "2", "timestamp": "2026-01-01T00:00:02Z" }`,
		`{ "from": "c", "text": "3", "timestamp": "2026-01-01T00:00:03Z" }`,
	}
	if len(added) != 2 {
		t.Errorf("added = %d entries, want 2", len(added))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged mismatch (-want +got):\n%s", diff)
	}
}
