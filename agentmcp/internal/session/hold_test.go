package session

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
)

// TestHoldRefused: a hold is refused, fn not called, while a turn runs or
// waits and while another hold runs, with INVALID_SESSION_PARAMS over
// ErrBusy or ErrHeld.
func TestHoldRefused(t *testing.T) {
	h := newHarness(t, nil)
	s := h.create("arch")
	first := runAsync(s, Turn{Prompt: "BLOCK", Source: SourceClaude})
	poll.Until(t, "the turn to run", func() bool { return s.Detail(0).Busy })
	called := false
	err := s.Hold(context.Background(), func(context.Context) error { called = true; return nil })
	if called || !errors.Is(err, ErrBusy) || !errors.Is(err, proxyerr.ErrInvalidSessionParams) {
		t.Errorf("Hold during a turn: called %v, err %v; want refused with ErrBusy", called, err)
	}
	h.fb.Answer("done")
	<-first

	inside := make(chan struct{})
	out := make(chan struct{})
	go func() {
		_ = s.Hold(context.Background(), func(context.Context) error { close(inside); <-out; return nil })
	}()
	<-inside
	err = s.Hold(context.Background(), func(context.Context) error { called = true; return nil })
	if called || !errors.Is(err, ErrHeld) {
		t.Errorf("a second Hold: called %v, err %v; want refused with ErrHeld", called, err)
	}
	close(out)
	poll.Until(t, "the hold to end", func() bool {
		return s.Hold(context.Background(), func(context.Context) error { return nil }) == nil
	})
}

// TestHoldKeepsTurnsOut: while a hold runs, a turn asked for waits in the
// queue (its call released) and reaches the backend only once fn has
// returned; auto-mail is not delivered; fn's error is Hold's.
func TestHoldKeepsTurnsOut(t *testing.T) {
	h := newHarness(t, nil)
	s := h.create("arch")
	if _, err := s.Run(context.Background(), Turn{Prompt: "first", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	var queued chan string
	call := &fakeCall{}
	var turnsInside int
	var mailInside bool
	want := errors.New("merge failed")
	err := s.Hold(context.Background(), func(context.Context) error {
		queued = runAsync(s, Turn{Prompt: "during the hold", Source: SourceClaude, Call: call})
		poll.Until(t, "the turn to be queued", func() bool { return s.Detail(0).Queued == 1 })
		turnsInside = len(h.fb.Requests())
		mailInside = s.TryMail("<team-mail>hi</team-mail>", func(bool) { t.Error("report called for a refused delivery") })
		return want
	})
	if !errors.Is(err, want) {
		t.Errorf("Hold = %v, want fn's error", err)
	}
	if turnsInside != 1 || mailInside {
		t.Errorf("inside the hold: %d turns reached the backend (want 1: the one before), mail delivered %v", turnsInside, mailInside)
	}
	if got := <-queued; got != "echo: during the hold" {
		t.Errorf("the queued turn gave %q", got)
	}
	call.mu.Lock()
	released := call.releases
	call.mu.Unlock()
	if released == 0 {
		t.Error("the queued call was not released before it waited")
	}
}

// TestHoldDelaysCloseRelease: a close during a hold waits for fn before it
// releases the session's place.
func TestHoldDelaysCloseRelease(t *testing.T) {
	fp := &fakePlaces{dirty: true}
	h := newHarness(t, func(c *Config) { c.Places = fp })
	s, err := h.m.Create(context.Background(), CreateRequest{Identity: "alice", Cwd: filepath.Join(h.dir), Isolation: IsolationWorktree})
	if err != nil {
		t.Fatal(err)
	}
	agentID := s.Record().AgentID
	inside, out := make(chan struct{}), make(chan struct{})
	var releasedInside []string
	held := make(chan error, 1)
	go func() {
		held <- s.Hold(context.Background(), func(context.Context) error {
			close(inside)
			<-out
			_, releasedInside, _ = fp.snapshot()
			return nil
		})
	}()
	<-inside
	closed := make(chan CloseOutcome, 1)
	go func() { closed <- h.m.Close(context.Background(), s, false) }()
	poll.Until(t, "the close to start", func() bool { return s.Detail(0).Status == "closed" })
	close(out)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	<-closed
	_, released, _ := fp.snapshot()
	if len(releasedInside) != 0 {
		t.Errorf("released during the hold: %v", releasedInside)
	}
	if diff := cmp.Diff([]string{agentID + " keep=false"}, released); diff != "" {
		t.Errorf("releases (-want +got):\n%s", diff)
	}
}
