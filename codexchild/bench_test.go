package codexchild

import (
	"context"
	"log/slog"
	"testing"
	"time"

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
		res, err := be.Turn(ctx, TurnRequest{Prompt: "bench", Params: ThreadParams{Cwd: dir}})
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}

// BenchmarkAppServerTurn is a minimal app-server round trip on one thread of
// mockcodex as 0.169.0: turn/start, its notifications and turn/completed.
func BenchmarkAppServerTurn(b *testing.B) {
	bin := mockBin(b)
	dir := b.TempDir()
	be := NewAppServer(Config{Bin: bin, Dir: dir, Logger: slog.New(slog.DiscardHandler),
		Env: []string{"MOCKCODEX_VERSION=0.169.0", "CODEX_HOME=" + dir}})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = be.Close(ctx)
	})
	ctx := context.Background()
	res, err := be.Turn(ctx, TurnRequest{Prompt: "start", Params: ThreadParams{Cwd: dir}})
	if err != nil || res.IsError {
		b.Fatal(res, err)
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := be.Turn(ctx, TurnRequest{ThreadID: res.ThreadID, Prompt: "bench"})
		if err != nil || r.IsError {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}
