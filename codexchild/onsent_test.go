package codexchild

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// TestOnSent: OnSent runs once, after the request is written and before the
// result.
func TestOnSent(t *testing.T) {
	cfg, cwd := setupMock(t)
	b := newBackend(t, cfg)
	var sent atomic.Int32
	var sentBeforeEvents atomic.Bool
	rec := newRecorder(nil)
	res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{
		Prompt: "hello", Params: backend.ThreadParams{Cwd: cwd}, Handler: rec,
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
	if _, err := dead.Turn(ctxFor(t, 10*time.Second), backend.TurnRequest{Prompt: "x", OnSent: func() { deadSent.Add(1) }}); err == nil {
		t.Fatal("Turn on a missing binary succeeded")
	}
	if deadSent.Load() != 0 {
		t.Error("OnSent called although nothing was written")
	}
}

// TestOnResult: OnResult gets the result Codex sent (an IsError one too),
// once, on the reader, before Turn returns that same result; a turn that
// ends otherwise (timeout, interrupt) never calls it.
func TestOnResult(t *testing.T) {
	cfg, cwd := setupMock(t)
	b := newBackend(t, cfg)
	type seen struct {
		res      *backend.Result
		returned bool // Turn had returned when OnResult ran
	}
	turn := func(req backend.TurnRequest) (*backend.Result, []seen, error) {
		t.Helper()
		var mu sync.Mutex
		var calls []seen
		var returned atomic.Bool
		req.OnResult = func(r *backend.Result) {
			mu.Lock()
			calls = append(calls, seen{r, returned.Load()})
			mu.Unlock()
		}
		res, err := b.Turn(ctxFor(t, 30*time.Second), req)
		returned.Store(true)
		mu.Lock()
		defer mu.Unlock()
		return res, calls, err
	}
	check := func(name string, res *backend.Result, err error, calls []seen) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(calls) != 1 || calls[0].res != res || calls[0].returned {
			t.Errorf("%s: OnResult calls %+v, want one with Turn's result %+v before Turn returned", name, calls, res)
		}
	}

	res, calls, err := turn(backend.TurnRequest{Prompt: "hello", Params: backend.ThreadParams{Cwd: cwd}})
	check("new thread", res, err, calls)
	if res.Text != "MOCK_REPLY: hello" || res.ThreadID == "" {
		t.Fatalf("new thread: %+v", res)
	}
	thread := res.ThreadID
	res, calls, err = turn(backend.TurnRequest{ThreadID: thread, Prompt: "again"})
	check("reply", res, err, calls)
	res, calls, err = turn(backend.TurnRequest{ThreadID: "019a0000-0000-7000-8000-000000000000", Prompt: "lost", SameThread: true})
	check("IsError result", res, err, calls)
	if !res.IsError {
		t.Errorf("reply to an unknown thread: %+v, want an IsError result", res)
	}

	_, calls, err = turn(backend.TurnRequest{ThreadID: thread, Prompt: "HANG", Timeout: 300 * time.Millisecond})
	var te *backend.TimeoutError
	if !errors.As(err, &te) || len(calls) != 0 {
		t.Errorf("timed out turn: err %v, OnResult calls %+v; want a TimeoutError and none", err, calls)
	}
	res, calls, err = turn(backend.TurnRequest{Prompt: "fresh", Params: backend.ThreadParams{Cwd: cwd}})
	check("new thread after a timeout", res, err, calls)
	fresh := res.ThreadID
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = b.Interrupt(context.Background(), fresh)
	}()
	res, calls, err = turn(backend.TurnRequest{ThreadID: fresh, Prompt: "HANG"})
	if err != nil || res.Status != "interrupted" || len(calls) != 0 {
		t.Errorf("interrupted turn: %+v, %v, OnResult calls %+v; want interrupted and none", res, err, calls)
	}
}
