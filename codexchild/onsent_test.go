package codexchild

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestOnSent: OnSent runs once, after the request is written and before the
// result.
func TestOnSent(t *testing.T) {
	cfg, cwd := setupMock(t)
	b := newBackend(t, cfg)
	var sent atomic.Int32
	var sentBeforeEvents atomic.Bool
	rec := newRecorder(nil)
	res, err := b.Turn(ctxFor(t, 30*time.Second), TurnRequest{
		Prompt: "hello", Params: ThreadParams{Cwd: cwd}, Handler: rec,
		OnSent: func() {
			sent.Add(1)
			events, _ := rec.snapshot()
			sentBeforeEvents.Store(len(events) == 0)
		},
	})
	if err != nil || res.Text != "MOCK_REPLY: hello" {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if n := sent.Load(); n != 1 {
		t.Errorf("OnSent called %d times, want 1", n)
	}
	if !sentBeforeEvents.Load() {
		t.Log("OnSent ran after the first events (allowed: the reader is concurrent)")
	}
}

// TestOnSentNotCalledOnFailure: no OnSent when nothing was written.
func TestOnSentNotCalledOnFailure(t *testing.T) {
	dead := newBackend(t, Config{Bin: "/nonexistent/codex"})
	var deadSent atomic.Int32
	if _, err := dead.Turn(ctxFor(t, 10*time.Second), TurnRequest{Prompt: "x", OnSent: func() { deadSent.Add(1) }}); err == nil {
		t.Fatal("Turn on a missing binary succeeded")
	}
	if deadSent.Load() != 0 {
		t.Error("OnSent called although nothing was written")
	}
}
