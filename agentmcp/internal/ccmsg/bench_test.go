package ccmsg_test

import (
	"context"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
)

// BenchmarkSend is one Send (dial, auth, one line, half-close, the peer's
// close) against a Unix socket of the test's own.
func BenchmarkSend(b *testing.B) {
	r := newRecorder(b)
	c, err := ccmsg.New(ccmsg.Config{Socket: r.path, Token: "tok"})
	if err != nil {
		b.Fatal(err)
	}
	msg := ccmsg.Message{Content: "Team mail from codex1 (status): the tests pass", From: "codex1"}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Send(context.Background(), msg); err != nil {
			b.Fatal(err)
		}
		<-r.got
	}
}
