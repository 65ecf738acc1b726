package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// TestHandOverAndTakeUp: a Manager whose conversation moved hands its live
// sessions over (a queued turn fails, a running one is given until the
// deadline and then interrupted, no summary is asked for, identities are
// released, nothing new starts); the proxy of the Claude Code session they
// went to adopts them and binds them again, turns and threads kept.
func TestHandOverAndTakeUp(t *testing.T) {
	h := newHarness(t, nil)
	arch := h.create("arch")
	if _, err := arch.Run(context.Background(), Turn{Prompt: "plan", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	dev := h.create("dev-1")
	running := runAsync(dev, Turn{Prompt: "BLOCK", Source: SourceClaude})
	poll.Until(t, "dev-1's turn to run", func() bool { return dev.Detail(0).Busy })
	queued := runAsync(dev, Turn{Prompt: "later", Source: SourceClaude})
	poll.Until(t, "a turn to be queued", func() bool { return dev.Detail(0).Queued == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got := h.m.HandOver(ctx, "141a23ea")
	type row struct {
		Identity, HandedTo string
		Status             registry.Status
		Turns              int
	}
	var rows []row
	for _, rec := range got {
		rows = append(rows, row{rec.Identity, rec.HandedTo, rec.Status, rec.Turns})
	}
	want := []row{{"arch", "141a23ea", registry.StatusStale, 1}, {"dev-1", "141a23ea", registry.StatusStale, 1}}
	if arch.Record().AgentID > dev.Record().AgentID {
		want[0], want[1] = want[1], want[0]
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("handed over (-want +got):\n%s", diff)
	}
	if msg := <-queued; !strings.Contains(msg, "was handed over to Claude Code session 141a23ea") {
		t.Errorf("the queued turn: %q", msg)
	}
	if msg := <-running; msg != "interrupted" {
		t.Errorf("the running turn: %q, want interrupted", msg)
	}
	for _, r := range h.fb.Requests() {
		if r.Prompt == summaryPrompt {
			t.Error("a summary was asked for: the thread goes on elsewhere")
		}
	}
	if live := h.m.Live(); len(live) != 0 {
		t.Errorf("live sessions after the hand-over: %v", live)
	}
	if _, err := h.m.Create(context.Background(), CreateRequest{Identity: "qa", Cwd: h.dir}); !errors.Is(err, proxyerr.ErrInvalidSessionParams) {
		t.Errorf("Create after the hand-over: %v, want a refusal", err)
	}
	if again := h.m.HandOver(context.Background(), "141a23ea"); len(again) != 0 {
		t.Errorf("a second HandOver handed %d sessions", len(again))
	}

	// The proxy of Claude Code session 141a23ea, another instance: the
	// identities are free, the sessions come back live there.
	if err := h.reg.Registry.(registryAdapter).Close(); err != nil {
		t.Fatal(err)
	}
	next, err := registry.Open(registry.Config{Home: h.dir, Team: "dev", Identity: "session-141a23ea"})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	m2, err := NewManager(Config{Home: h.dir, Team: "dev", Backends: map[string]Backend{registry.DefaultKind: h.fb}, Registry: RegistryOf(next), Cwd: h.dir, PersistThreads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m2.Shutdown(); m2.Stop(); m2.Wait(5 * time.Second) }()
	adopted, err := next.AdoptHandedTo("proxy", "141a23ea")
	if err != nil || len(adopted) != 2 {
		t.Fatalf("AdoptHandedTo: %d sessions, %v", len(adopted), err)
	}
	for _, rec := range adopted {
		s := m2.Take(rec)
		if m2.Take(rec) != s {
			t.Error("Take twice gave two sessions")
		}
		if err := m2.Rebind(s, SourceResume); err != nil {
			t.Fatalf("Rebind %s: %v", rec.Identity, err)
		}
		after := s.Record()
		if !after.Status.Live() || after.HandedTo != "" || after.Turns != 1 || after.BackendID != rec.BackendID {
			t.Errorf("%s taken up: %+v; want live, no longer handed, 1 turn, thread %s", rec.Identity, after, rec.BackendID)
		}
	}
	if n := len(m2.Live()); n != 2 {
		t.Errorf("%d live sessions in the next proxy, want 2", n)
	}
	res, err := m2.ByIdentity("arch").Run(context.Background(), Turn{Prompt: "go on", Source: SourceClaude})
	if err != nil || res.ThreadID != arch.Record().BackendID {
		t.Errorf("arch's next turn: %+v, %v; want it on thread %s", res, err, arch.Record().BackendID)
	}
}
