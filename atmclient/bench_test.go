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
// per iteration), through one Client as a proxy would. Each append also
// records the message in the inbox journal and fsyncs it.
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

// BenchmarkAppendTwoClients appends to an inbox of 10,000 messages from
// two Clients in turn, as two processes would: each write reads the
// inbox elements and journal records the other appended.
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
