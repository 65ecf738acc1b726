package codexchild

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// benchBackend returns a started backend on mockcodex.
func benchBackend(b *testing.B) (*MCPServer, string) {
	bin := mockBin(b)
	dir := b.TempDir()
	be := NewMCPServer(Config{Bin: bin, Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = be.Close(ctx)
	})
	if _, err := be.Tools(context.Background()); err != nil {
		b.Fatal(err)
	}
	return be, dir
}

// BenchmarkForwardPing is one request/response round trip through the
// backend to mockcodex and back.
func BenchmarkForwardPing(b *testing.B) {
	be, _ := benchBackend(b)
	req, _ := jsonrpcframe.NewRequest(jsonrpcframe.IntID(1), "ping", nil)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := be.Forward(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}

// BenchmarkTurn is a minimal turn (a new thread, its events and result).
func BenchmarkTurn(b *testing.B) {
	be, dir := benchBackend(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := be.Turn(ctx, backend.TurnRequest{Prompt: "bench", Params: backend.ThreadParams{Cwd: dir}})
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}

// BenchmarkAppServerTurn is a minimal app-server round trip on one thread of
// mockcodex (as the tested app-server): turn/start, its notifications and turn/completed.
func BenchmarkAppServerTurn(b *testing.B) {
	bin := mockBin(b)
	dir := b.TempDir()
	be := NewAppServer(Config{Bin: bin, Dir: dir, Logger: slog.New(slog.DiscardHandler),
		Env: []string{"MOCKCODEX_VERSION=" + TestedAppServerCodex, "CODEX_HOME=" + dir}})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = be.Close(ctx)
	})
	ctx := context.Background()
	res, err := be.Turn(ctx, backend.TurnRequest{Prompt: "start", Params: backend.ThreadParams{Cwd: dir}})
	if err != nil || res.IsError {
		b.Fatal(res, err)
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := be.Turn(ctx, backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "bench"})
		if err != nil || r.IsError {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}

// captureHandler keeps a turn's events.
type captureHandler struct{ events []backend.Event }

func (h *captureHandler) Event(e backend.Event) { h.events = append(h.events, e) }
func (h *captureHandler) Approval(a *backend.Approval) {
	_ = a.Respond(backend.Decision{Kind: backend.Deny})
}

// nopHandler drops a turn's events.
type nopHandler struct{}

func (nopHandler) Event(backend.Event)          {}
func (nopHandler) Approval(a *backend.Approval) { _ = a.Respond(backend.Decision{Kind: backend.Deny}) }

// BenchmarkDispatchEvent replays the codex/event lines of a mockcodex turn
// through the reader's path with no I/O: parsing the line, reading the
// envelope, routing it to its turn, the turn's bookkeeping and its handler
// (which does nothing). It is the backend's CPU per event (ns/op is per
// event).
func BenchmarkDispatchEvent(b *testing.B) {
	lines, threadID := eventLines(b)
	// A backend with no child, and the turn the events belong to pending
	// under the request id they carry.
	m, err := jsonrpcframe.Parse(lines[0])
	if err != nil {
		b.Fatal(err)
	}
	var env eventEnvelope
	if !env.scan(m.Params, &interner{}) {
		b.Fatal("no envelope")
	}
	reqID, _ := jsonrpcframe.ParseID(env.Meta.RequestID)
	rb := NewMCPServer(Config{Logger: slog.New(slog.DiscardHandler)})
	t := &turn{handler: nopHandler{}, threadID: threadID}
	rb.pending[reqID] = &call{id: reqID, method: "tools/call", reply: make(chan reply, 1), turn: t}
	rb.threads[threadID] = rb.pending[reqID]
	var size int
	for _, l := range lines {
		size += len(l)
	}
	b.SetBytes(int64(size / len(lines)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m, err := jsonrpcframe.Parse(lines[i])
		if err != nil {
			b.Fatal(err)
		}
		rb.dispatch(m)
		if i++; i == len(lines) {
			i = 0
			t.texts = t.texts[:0]
		}
	}
	b.ReportMetric(float64(len(lines)), "events/turn")
}

// eventLines returns the codex/event lines of a second turn of a mockcodex
// thread, as the child writes them, and the thread's id.
func eventLines(b *testing.B) ([][]byte, string) {
	be, dir := benchBackend(b)
	ctx := context.Background()
	first, err := be.Turn(ctx, backend.TurnRequest{Prompt: "start", Params: backend.ThreadParams{Cwd: dir}})
	if err != nil {
		b.Fatal(err)
	}
	h := &captureHandler{}
	if _, err := be.Turn(ctx, backend.TurnRequest{ThreadID: first.ThreadID, Prompt: "bench", Handler: h}); err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	for _, e := range h.events {
		lines = append(lines, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"codex/event","params":%s}`, e.Params))
	}
	if len(lines) < 5 {
		b.Fatalf("only %d events", len(lines))
	}
	return lines, first.ThreadID
}
