package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// TestInterrupt interrupts a running turn of agents that answer a cancel
// in each way seen in the field: cancelled (the spec), end_turn (Copilot),
// an error (opencode once); and one that does not answer (killed at the
// deadline).
func TestInterrupt(t *testing.T) {
	tests := []struct {
		onCancel   string
		wantStop   acp.StopReason
		wantKilled bool
	}{
		{"", acp.StopCancelled, false},
		{"end_turn", acp.StopEndTurn, false},
		{"error", acp.StopCancelled, false},
		{"ignore", "", true},
	}
	for _, tc := range tests {
		t.Run("on cancel "+tc.onCancel, func(t *testing.T) {
			t.Parallel()
			cfg := fakeConfig(t, "FAKEACP_ON_CANCEL="+tc.onCancel)
			cfg.CancelTimeout = 5 * time.Second // room on a loaded machine
			if tc.wantKilled {
				cfg.CancelTimeout = 500 * time.Millisecond
			}
			c := start(t, cfg)
			s := newSession(t, c, acp.SessionParams{})
			type outcome struct {
				res *acp.TurnResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := s.Prompt(context.Background(), acp.TurnRequest{Text: "say working\nwait"})
				done <- outcome{res, err}
			}()
			waitState(t, c, acp.StateRunning)
			time.Sleep(50 * time.Millisecond) // let "say" reach the client
			ierr := s.Interrupt(t.Context())
			got := <-done
			if !tc.wantKilled {
				if ierr != nil || got.err != nil {
					t.Fatalf("Interrupt = %v, Prompt = %v; want both nil", ierr, got.err)
				}
				if got.res.StopReason != tc.wantStop || !got.res.Cancelled || got.res.Text != "working" {
					t.Errorf("result stop %q cancelled %v text %q; want %q true %q", got.res.StopReason, got.res.Cancelled, got.res.Text, tc.wantStop, "working")
				}
				if st := c.Status().State; st != acp.StateIdle {
					t.Errorf("state after the interrupt %q, want idle", st)
				}
				// The session takes the next turn.
				if res := prompt(t, s, "say again"); res.Text != "again" || res.Cancelled || !res.AfterCancel {
					t.Errorf("next turn: %+v", res)
				}
				return
			}
			if !errors.Is(ierr, acp.ErrCancelIgnored) {
				t.Errorf("Interrupt = %v, want ErrCancelIgnored", ierr)
			}
			var ee *acp.ExitError
			if !errors.As(got.err, &ee) || !strings.Contains(ee.Reason, "after session/cancel") || ee.During != "session/prompt" {
				t.Fatalf("Prompt error = %v, want an *ExitError during session/prompt saying it was killed after session/cancel", got.err)
			}
			st := c.Status()
			if st.State != acp.StateDead || st.Exit == nil || st.Exit.Signal != "killed" {
				t.Errorf("status %+v, want dead, killed", st)
			}
		})
	}
}

// TestInterruptPendingPermission: an interrupt answers the pending
// permission request cancelled without waiting for the Asker, whose ctx
// ends.
func TestInterruptPendingPermission(t *testing.T) {
	t.Parallel()
	opts, _ := json.Marshal(agentOptions["claude"])
	cfg := fakeConfig(t, "FAKEACP_OPTIONS="+string(opts))
	asked := make(chan struct{})
	askerDone := make(chan error, 1)
	cfg.Asker = acp.AskerFunc(func(ctx context.Context, req acp.PermissionRequest) acp.Decision {
		close(asked)
		<-ctx.Done()
		askerDone <- ctx.Err()
		return acp.AllowOnce // too late: the request was answered cancelled
	})
	c := start(t, cfg)
	s := newSession(t, c, acp.SessionParams{Mode: "default"})
	done := make(chan *acp.TurnResult, 1)
	go func() {
		res, err := s.Prompt(context.Background(), acp.TurnRequest{Text: "ask t1\nsay not reached"})
		if err != nil {
			t.Errorf("Prompt: %v", err)
		}
		done <- res
	}()
	<-asked
	if err := s.Interrupt(t.Context()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	res := <-done
	if res == nil || res.StopReason != acp.StopCancelled || res.Text != "" {
		t.Errorf("result %+v, want cancelled with no text", res)
	}
	if err := <-askerDone; !errors.Is(err, context.Canceled) {
		t.Errorf("Asker ctx ended with %v, want context.Canceled", err)
	}
	if got := c.Status(); got.Permissions != 0 || got.State != acp.StateIdle {
		t.Errorf("status %+v, want idle with no permission pending", got)
	}
}

// TestTurnTimeout: a turn that runs out of time is interrupted; Prompt
// returns its result with a *TimeoutError.
func TestTurnTimeout(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig(t))
	s := newSession(t, c, acp.SessionParams{})
	res, err := s.Prompt(t.Context(), acp.TurnRequest{Text: "say slow\nwait", Timeout: 300 * time.Millisecond})
	var te *acp.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, acp.ErrTimeout) || te.Method != "session/prompt" {
		t.Fatalf("err = %v, want a *TimeoutError of session/prompt", err)
	}
	if res == nil || res.StopReason != acp.StopCancelled || !res.Cancelled || res.Text != "slow" {
		t.Errorf("result %+v, want the cancelled turn with its text", res)
	}
	// ctx ending is an interrupt too.
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err = s.Prompt(ctx, acp.TurnRequest{Text: "wait"})
	if !errors.Is(err, context.Canceled) || res == nil || res.StopReason != acp.StopCancelled {
		t.Errorf("ctx cancelled: %+v, %v; want the cancelled result and context.Canceled", res, err)
	}
}

// waitState waits until the client is in state.
func waitState(t *testing.T, c *acp.Client, state acp.State) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.Status().State != state {
		if time.Now().After(deadline) {
			t.Fatalf("state %q, want %q", c.Status().State, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
