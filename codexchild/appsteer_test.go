package codexchild

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// TestAppSteerTurnEndedFirst: a steer that Codex gets after the turn has
// ended (mockcodex's STEER_RACE: the turn completes, then turn/steer is
// refused with "no active turn to steer") is a *SteerError turn_ended, and
// the turn's result is the answer to its own prompt alone: the caller
// delivers the input as the next turn.
func TestAppSteerTurnEndedFirst(t *testing.T) {
	cfg, cwd := setupMockApp(t)
	b := newAppBackend(t, cfg)
	rec := newRecorder(nil)
	type out struct {
		res *backend.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := b.Turn(ctxFor(t, 60*time.Second), backend.TurnRequest{Prompt: "SLOW=30 STEER_RACE", Params: backend.ThreadParams{Cwd: cwd}, Handler: rec})
		done <- out{res, err}
	}()
	rec.waitType(t, "turn/started", 30*time.Second)
	events, _ := rec.snapshot()
	thread := events[len(events)-1].ThreadID
	err := b.Steer(ctxFor(t, 10*time.Second), thread, "mail for the agent")
	var se *backend.SteerError
	if !errors.As(err, &se) || !errors.Is(err, backend.ErrNotSteered) {
		t.Fatalf("Steer = %v, want a *SteerError", err)
	}
	got := struct {
		Why   backend.SteerRefusal
		Codex string
		Turn  bool
	}{se.Why, se.Refusal.Message, se.TurnID != ""}
	want := struct {
		Why   backend.SteerRefusal
		Codex string
		Turn  bool
	}{backend.SteerTurnEnded, "no active turn to steer", true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SteerError (-want +got):\n%s", diff)
	}
	o := <-done
	if o.err != nil || o.res.IsError || o.res.Text != "MOCK_REPLY: SLOW=30 STEER_RACE" {
		t.Errorf("Turn = %+v, %v; want the answer to its own prompt", o.res, o.err)
	}
}
