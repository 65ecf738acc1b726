package atmclient

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// seedInbox writes an inbox of n messages in the atm CLI's shape.
func seedInbox(b *testing.B, c *Client, agent string, n int) string {
	b.Helper()
	path := inboxPath(b, c, "dev", agent)
	var sb strings.Builder
	sb.WriteString("[")
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "\n  {\n    \"from\": \"sender-%d\",\n    \"source_team\": \"dev\",\n    \"text\": \"message number %d with a little text <in> it\",\n    \"timestamp\": %q,\n    \"read\": %t,\n    \"summary\": \"message number %d\",\n    \"message_id\": \"00000000-0000-4000-8000-%012d\"\n  }",
			i%7, i, t0.Add(time.Duration(i)*time.Second).Format(TimestampLayout), i%2 == 0, i, i)
	}
	sb.WriteString("\n]")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkAppend appends to an inbox of 10,000 messages (growing by one
// per iteration), through one Client as a proxy would, under both locks.
// Each append also records the write in the inbox journal and fsyncs it.
func BenchmarkAppend(b *testing.B) {
	c, _ := newTestHome(b, "a", "inbox")
	seedInbox(b, c, "inbox", 10000)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "inbox", Text: fmt.Sprintf("bench %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendLocks shows what Claude Code's lock directory costs a Send
// on top of the atm CLI's flock, on a small inbox (10 messages, consumed
// back to 10 every 100 Sends, as a Claude Code reader keeps it) and on one
// of 10,000. A Send holds both locks for nearly all of its time, so its
// time per operation is also about how long Claude Code's writers wait
// for us (they give up after about 0.65 s).
func BenchmarkSendLocks(b *testing.B) {
	for _, size := range []int{10, 10000} {
		for _, mode := range []string{"flock only", "both locks"} {
			b.Run(fmt.Sprintf("inbox=%d/%s", size, mode), func(b *testing.B) {
				c, _ := newTestHome(b, "a", "inbox")
				c.flockOnly = mode == "flock only"
				path := seedInbox(b, c, "inbox", size)
				seed := mustRead(b, path)
				for i := 0; b.Loop(); i++ {
					if i%100 == 99 {
						b.StopTimer()
						os.WriteFile(path, seed, 0o600)
						b.StartTimer()
					}
					if _, err := c.Send(bg, SendRequest{From: "a", Team: "dev", To: "inbox", Text: fmt.Sprintf("bench %d", i)}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAppendTwoClients appends to an inbox of 10,000 messages from
// two Clients in turn, as two processes would: each write parses the
// inbox elements the other appended.
func BenchmarkAppendTwoClients(b *testing.B) {
	c, _ := newTestHome(b, "a", "inbox")
	c2, err := New(Config{Home: c.Home()})
	if err != nil {
		b.Fatal(err)
	}
	seedInbox(b, c, "inbox", 10000)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := []*Client{c, c2}[i%2].Send(bg, SendRequest{From: "a", Team: "dev", To: "inbox", Text: fmt.Sprintf("bench %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead reads unread mail from an inbox of 10,000 messages: cold
// (a new Client, as after another process rewrote the file) and warm (the
// file unchanged or only appended to since the last read).
func BenchmarkRead(b *testing.B) {
	c, _ := newTestHome(b, "inbox")
	seedInbox(b, c, "inbox", 10000)
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			c2, _ := New(Config{Home: c.Home()})
			if res, err := c2.Read(bg, "dev", "inbox", ReadOptions{}); err != nil || len(res.Messages) != 5000 {
				b.Fatal(len(res.Messages), err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			if res, err := c.Read(bg, "dev", "inbox", ReadOptions{}); err != nil || len(res.Messages) != 5000 {
				b.Fatal(len(res.Messages), err)
			}
		}
	})
}
