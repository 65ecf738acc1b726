package codexchild

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// TestAppResumeAfterThreadNotFound: a thread the backend believes loaded
// but Codex does not know (turn/start: "thread not found") is resumed and
// the turn retried; with SameThread it is an IsError result.
func TestAppResumeAfterThreadNotFound(t *testing.T) {
	cfg, cwd := setupMockApp(t)
	var thread string
	t.Run("first_process", func(t *testing.T) {
		b := newAppBackend(t, cfg)
		res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "hello", Params: backend.ThreadParams{Cwd: cwd}})
		if err != nil || res.IsError {
			t.Fatalf("Turn = %+v, %v", res, err)
		}
		thread = res.ThreadID
	})
	b := newAppBackend(t, cfg)
	if err := b.ensureStarted(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.loaded[thread] = true // as if this process had run it and lost it
	b.mu.Unlock()
	res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{ThreadID: thread, Prompt: "no resume", SameThread: true})
	if err != nil || !res.IsError || !strings.Contains(res.Text, "thread not found") {
		t.Errorf("Turn with SameThread = %+v, %v; want IsError thread not found", res, err)
	}
	var sent int
	res, err = b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{ThreadID: thread, Prompt: "resumed", OnSent: func() { sent++ }})
	if err != nil || res.IsError || res.Text != "MOCK_REPLY: resumed" || res.ThreadID != thread {
		t.Errorf("Turn = %+v, %v; want the reply after thread/resume", res, err)
	}
	if sent != 1 {
		t.Errorf("OnSent called %d times, want once", sent)
	}
}

// TestAppCtxCancelAndBusy: a second turn on a running thread fails with
// ErrThreadBusy; cancelling the Turn's ctx interrupts the turn in Codex
// and returns the interrupted Result with ctx's error; notifications of no
// running turn reach OnEvent.
func TestAppCtxCancelAndBusy(t *testing.T) {
	cfg, cwd := setupMockApp(t)
	var mu sync.Mutex
	orphans := map[string]int{}
	cfg.OnEvent = func(e backend.Event) { mu.Lock(); orphans[e.Method]++; mu.Unlock() }
	b := newAppBackend(t, cfg)
	rec := newRecorder(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type out struct {
		res *backend.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := b.Turn(ctx, backend.TurnRequest{Prompt: "SLOW=30 cancel me", Params: backend.ThreadParams{Cwd: cwd}, Handler: rec})
		done <- out{res, err}
	}()
	rec.waitType(t, "turn/started", 10*time.Second)
	events, _ := rec.snapshot()
	thread := events[len(events)-1].ThreadID
	if _, err := b.Turn(ctxFor(t, 5*time.Second), backend.TurnRequest{ThreadID: thread, Prompt: "me too"}); !errors.Is(err, backend.ErrThreadBusy) {
		t.Errorf("second Turn = %v, want ErrThreadBusy", err)
	}
	// The steer's own answer is slow too: the turn stays busy for the cancel.
	if err := steerOf(t, b).Steer(ctxFor(t, 5*time.Second), thread, "SLOW=30 more"); err != nil {
		t.Errorf("Steer: %v", err)
	}
	cancel()
	o := <-done
	if !errors.Is(o.err, context.Canceled) || o.res == nil || o.res.Status != "interrupted" || !o.res.IsError {
		t.Fatalf("Turn = %+v, %v; want interrupted and context.Canceled", o.res, o.err)
	}
	// The interrupted turn's end reaches OnEvent, and the thread is free.
	res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{ThreadID: thread, Prompt: "next"})
	if err != nil || res.Text != "MOCK_REPLY: next" {
		t.Fatalf("Turn after cancel = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range []string{"configWarning", "turn/completed"} {
		if orphans[m] == 0 {
			t.Errorf("OnEvent got no %s; got %v", m, orphans)
		}
	}
}
