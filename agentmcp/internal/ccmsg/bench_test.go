package ccmsg_test

import (
	"context"
	"net"
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

// BenchmarkKeptConnection is the alternative Send does not take, for
// comparison: one line per message on a connection kept open after its
// auth line (the recorder sees each line as it comes).
func BenchmarkKeptConnection(b *testing.B) {
	r := newRecorder(b)
	conn, err := net.Dial("unix", r.path)
	if err != nil {
		b.Fatal(err)
	}
	line, err := ccmsg.Lines(ccmsg.Message{Content: "Team mail from codex1 (status): the tests pass", From: "codex1"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Write([]byte(`{"type":"auth","token":"tok"}` + "\n")); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(line); err != nil {
			b.Fatal(err)
		}
	}
	conn.Close()
	<-r.got
}
