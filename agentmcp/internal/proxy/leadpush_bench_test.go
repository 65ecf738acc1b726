package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/mailbridge"
)

// noTarget is a mailbridge.Target for a bridge that serves no session.
type noTarget struct{}

func (noTarget) Deliver(string, string, []atmclient.Message, func(bool)) bool { return false }

// BenchmarkLeadPush measures the lead's push path end to end: a message
// appended to team-lead's inbox (atmclient.Send, both locks) until its line
// arrives on a messaging socket of the benchmark's own (a Unix listener),
// through the bridge's watch, its read, the push and the mark. It reports
// the p50 and p90 of that latency (issue 30 asks for a p50 under 100 ms);
// the poll interval is the default 5 s, so only the watch can be that fast.
// The benchmark's socket takes every line, so the push's gate is opened
// wide: it measures the path, not the pacing under Claude Code's gate
// (TestGatePace, TestLeadPushGated).
func BenchmarkLeadPush(b *testing.B) {
	home := b.TempDir()
	writeTeam(b, home, "dev", "team-lead", "arch")
	sock := listenCC(b, socketPath(b))
	atm, err := atmclient.New(atmclient.Config{Home: home})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	br, err := mailbridge.New(mailbridge.Config{ATM: atm, Team: "dev", Target: noTarget{}, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	lp := newLeadPush(Options{Team: "dev", Identity: "team-lead", DefaultIdentity: "codex", LeadPush: true,
		MessagingSocket: sock.path, MessagingToken: "tok", Now: time.Now}, atm, log)
	lp.gate = newGate(gateConfig{burst: 1e9, queue: 1e9}, time.Now)
	lp.start(br)
	ctx := context.Background()
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		text := fmt.Sprintf("message %d", i)
		start := time.Now()
		if _, err := atm.Send(ctx, atmclient.SendRequest{From: "arch", Team: "dev", To: "team-lead", Text: text}); err != nil {
			b.Fatal(err)
		}
		for {
			var line map[string]any
			select {
			case line = <-sock.lines:
			case <-time.After(3 * time.Second):
				b.Fatalf("no line; stats %+v; inbox %+v", br.Stats("team-lead"), inbox(b, home, "team-lead"))
			}
			if m, ok := line["message"].(map[string]any); ok && m["content"] == ccmsg.Envelope("arch", "arch", text) {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10])/float64(time.Millisecond), "p90-ms")
}
