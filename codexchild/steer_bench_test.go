package codexchild

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// BenchmarkSteerToModel is mail that steers a busy agent: the real Codex
// (the pinned app-server) runs a turn whose model request is in flight
// (SLOW=60), and each iteration hands a text to Steer and waits until the
// mock model receives Codex's next request carrying that text. Each text
// is slow again, so the turn stays busy from one iteration to the next.
// It reports the latency's p50 and p90 (issue 42 asks p50 < 1 s; queueing
// the mail instead costs the rest of the turn).
func BenchmarkSteerToModel(b *testing.B) {
	bin := realcodex.Bin(b, realcodex.AppServer)
	mock, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mock.Close() })
	home := realcodex.NewHome(b, mock.URL(), nil)
	be := NewAppServer(Config{Bin: bin, Dir: home.WorkDir, Env: home.Env(), ReplaceEnv: true, Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = be.Close(ctx)
	})
	ctx := context.Background()
	threads := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := be.Turn(ctx, backend.TurnRequest{Prompt: "SLOW=60 a long task", Params: backend.ThreadParams{Cwd: home.WorkDir}, Timeout: -1,
			OnThread: func(id string) { threads <- id }})
		done <- err
	}()
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := mock.WaitRequests(waitCtx, 1); err != nil {
		b.Fatal(err)
	}
	thread := <-threads
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		text := fmt.Sprintf("SLOW=60 mail %d", i)
		n := len(mock.Requests())
		start := time.Now()
		if err := be.Steer(ctx, thread, text); err != nil {
			b.Fatalf("Steer %d: %v", i, err)
		}
		for seen := false; !seen; {
			reqs, err := mock.WaitRequests(waitCtx, n+1)
			if err != nil {
				b.Fatalf("mail %d never reached the model: %v", i, err)
			}
			for _, r := range reqs[n:] {
				seen = seen || strings.Contains(r.LastUserText, text)
			}
			n = len(reqs)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	if err := be.Interrupt(ctx, thread); err != nil {
		b.Fatal(err)
	}
	<-done
	slices.Sort(lat)
	pct := func(p int) float64 { return float64(lat[(len(lat)-1)*p/100].Microseconds()) / 1000 }
	b.ReportMetric(pct(50), "p50-ms")
	b.ReportMetric(pct(90), "p90-ms")
}
