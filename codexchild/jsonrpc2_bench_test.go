package codexchild

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// BenchmarkEventFraming is the measurement behind the choice of the
// backends' request/response core (doc.go): the reader's work per codex/event
// notification, from the child's bytes to a message a dispatcher can route,
// with jsonrpcframe's line reader and with sourcegraph/jsonrpc2's Conn over
// a plain object stream. The stream is a mockcodex turn's events, repeated;
// ns/op is per stream, and the ns/event metric is what counts.
func BenchmarkEventFraming(b *testing.B) {
	lines, _ := eventLines(b)
	var stream []byte
	const repeat = 50
	for range repeat {
		for _, l := range lines {
			stream = append(append(stream, l...), '\n')
		}
	}
	events := float64(repeat * len(lines))
	b.Run("jsonrpcframe", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			r := jsonrpcframe.NewLineReader(bytes.NewReader(stream), nil)
			n := 0
			for {
				m, err := r.Read()
				if err != nil {
					break
				}
				if m.Method == "codex/event" && len(m.Params) > 0 {
					n++
				}
			}
			if float64(n) != events {
				b.Fatalf("%d events, want %v", n, events)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/events, "ns/event")
	})
	b.Run("sourcegraph-jsonrpc2", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			h := &eventCounter{}
			c := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(readOnly{bytes.NewReader(stream)}), h)
			<-c.DisconnectNotify()
			if float64(h.n) != events {
				b.Fatalf("%d events, want %v", h.n, events)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/events, "ns/event")
	})
}

// eventCounter counts the codex/event notifications jsonrpc2 hands it
// (on its reading goroutine, in order, as the backends' reader would).
type eventCounter struct{ n int }

func (h *eventCounter) Handle(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) {
	if r.Notif && r.Method == "codex/event" && r.Params != nil {
		h.n++
	}
}

// readOnly is a stream that reads from r and discards writes.
type readOnly struct{ r io.Reader }

func (s readOnly) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s readOnly) Write(p []byte) (int, error) { return len(p), nil }
func (s readOnly) Close() error                { return nil }
