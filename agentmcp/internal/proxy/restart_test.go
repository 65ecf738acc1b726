package proxy

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/fakebackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/google/go-cmp/cmp"
)

// child is the fake backend as a supervised app-server child with pid,
// running at once unless unstarted, whose Start waits for startGate and
// Close for closeGate when they are set.
func child(pid int, unstarted bool, startGate, closeGate chan struct{}) *fakebackend.Backend {
	return fakebackend.New(fakebackend.Config{Protocol: codexchild.KindAppServer, PID: pid, Unstarted: unstarted, StartGate: startGate, CloseGate: closeGate})
}

// stubCodex returns a codex over first whose restarts make children from
// next, counting them.
func stubCodex(first *fakebackend.Backend, next func(n int) *fakebackend.Backend) (*codex, *atomic.Int64) {
	var made atomic.Int64
	c := newCodex(first, Options{NewBackend: func() (backend.Backend, error) {
		return next(int(made.Add(1))), nil
	}}, slog.New(slog.DiscardHandler), session.NewAuditor(nil, nil))
	return c, &made
}

// TestRestartsCoalesce: restart calls made while a restart runs wait for
// it and return its result; one child is made however many calls, with or
// without force; the child the proxy stops is no crash.
func TestRestartsCoalesce(t *testing.T) {
	tests := []struct {
		name        string
		dead        bool   // the first child crashed before the calls
		force       []bool // one call each, concurrently
		wantCrashes int
		wantPrev    string
	}{
		{"after a crash, without force", true, []bool{false, false, false}, 1, "killed by signal killed"},
		{"after a crash, mixed", true, []bool{false, true, false, true}, 1, "killed by signal killed"},
		{"running, forced", false, []bool{true, true, true}, 0, "running (forced)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := child(100, false, nil, nil)
			if tt.dead {
				first.Die()
			}
			gate := make(chan struct{})
			c, made := stubCodex(first, func(n int) *fakebackend.Backend { return child(100+n, true, gate, nil) })
			reps := make([]tools.RestartReport, len(tt.force))
			errs := make([]error, len(tt.force))
			var wg sync.WaitGroup
			for i, force := range tt.force {
				if i == 1 {
					poll.Until(t, "the first restart to begin", func() bool { return c.Restarts().Restarting })
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					reps[i], errs[i] = c.Restart(context.Background(), force)
				}()
			}
			poll.Until(t, "every call to wait for the restart", func() bool { return c.callers() == len(tt.force) })
			close(gate)
			wg.Wait()
			for i := range tt.force {
				if errs[i] != nil {
					t.Fatalf("call %d: %v", i, errs[i])
				}
				want := tools.RestartReport{PID: 101, Backend: "app-server", Restarts: 1, Previous: tt.wantPrev}
				if diff := cmp.Diff(want, reps[i]); diff != "" {
					t.Errorf("call %d's report (-want +got):\n%s", i, diff)
				}
			}
			if got := made.Load(); got != 1 {
				t.Errorf("children made = %d, want 1", got)
			}
			got := c.Restarts()
			if got.Crashes != tt.wantCrashes || got.Restarts != 1 || got.Restarting {
				t.Errorf("Restarts() = %+v, want %d crash(es), 1 restart, none running", got, tt.wantCrashes)
			}
		})
	}
}

// callers is how many calls wait for the restart in progress.
func (c *codex) callers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.op == nil {
		return 0
	}
	return int(c.op.callers.Load())
}

// TestSlowCloseHoldsNothing: while the old child takes its time to stop,
// agent_status's counters answer (restarting), turns wait for the restart
// and then run on the new child.
func TestSlowCloseHoldsNothing(t *testing.T) {
	closeGate := make(chan struct{})
	first := child(100, false, nil, closeGate)
	c, _ := stubCodex(first, func(n int) *fakebackend.Backend { return child(100+n, true, nil, nil) })
	restarted := make(chan error, 1)
	go func() {
		_, err := c.Restart(context.Background(), true)
		restarted <- err
	}()
	poll.Until(t, "the restart to begin", func() bool { return c.Restarts().Restarting })
	if !c.MailPaused() {
		t.Error("MailPaused() = false during a restart, want true")
	}
	turned := make(chan error, 1)
	go func() {
		_, err := c.Turn(context.Background(), backend.TurnRequest{})
		turned <- err
	}()
	select {
	case err := <-turned:
		t.Fatalf("a turn ended during the restart (%v); want it to wait", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(closeGate)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if err := <-turned; err != nil {
		t.Errorf("the turn after the restart: %v", err)
	}
	if st := c.Status(); st.PID != 101 || !st.Running {
		t.Errorf("Status() = %+v, want the new child (pid 101) running", st)
	}
	if rc := c.Restarts(); rc.Crashes != 0 || rc.Restarting || rc.MailWaitingOnRestart {
		t.Errorf("Restarts() = %+v, want no crash, not restarting, mail not waiting", rc)
	}
}

// TestCloseWaitsForRestart: shutdown during a restart stops the child the
// restart started; nothing counts as a crash and the restart fails.
func TestCloseWaitsForRestart(t *testing.T) {
	first := child(100, false, nil, nil)
	first.Die()
	gate := make(chan struct{})
	var second *fakebackend.Backend
	c, _ := stubCodex(first, func(n int) *fakebackend.Backend { second = child(100+n, true, gate, nil); return second })
	restarted := make(chan error, 1)
	go func() {
		_, err := c.Restart(context.Background(), false)
		restarted <- err
	}()
	poll.Until(t, "the new child to be in place", func() bool { return c.Status().PID == 0 && c.Restarts().Restarting })
	closed := make(chan error, 1)
	go func() { closed <- c.Close(context.Background()) }()
	poll.Until(t, "Close to stop the new child", func() bool { return second.Closes() > 0 })
	close(gate)
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-restarted; err == nil {
		t.Error("the restart succeeded after Close, want an error")
	}
	if rc := c.Restarts(); rc.Crashes != 1 {
		t.Errorf("crashes = %d, want 1 (the first child's; none for the child Close stopped)", rc.Crashes)
	}
}

// TestRefusalSaysWhen: after three crashes within the window, restarts are
// refused with the crashes and the time they are allowed again, and no
// error advises a restart.
func TestRefusalSaysWhen(t *testing.T) {
	first := child(100, false, nil, nil)
	c, _ := stubCodex(first, func(n int) *fakebackend.Backend { return child(100+n, true, nil, nil) })
	for i := range 3 {
		box := c.get()
		box.b.(*fakebackend.Backend).Die()
		_, err := c.Turn(context.Background(), backend.TurnRequest{})
		if i < 2 {
			if _, err := c.Restart(context.Background(), false); err != nil {
				t.Fatalf("restart %d: %v", i+1, err)
			}
			continue
		}
		var re *backend.RecoveryError
		if !errors.As(err, &re) || re.Data["restart_refused"] != true {
			t.Fatalf("the third crash's error = %v, want a refusal", err)
		}
	}
	_, err := c.Restart(context.Background(), true)
	if err == nil {
		t.Fatal("a restart after 3 crashes was accepted")
	}
	rc := c.Restarts()
	if rc.RestartRefusedUntil == "" || len(rc.RecentCrashes) != 3 || !rc.MailWaitingOnRestart {
		t.Errorf("Restarts() = %+v, want refused until a time, 3 recent crashes, mail waiting", rc)
	}
	if err := c.Unavailable(); err == nil {
		t.Error("Unavailable() = nil while restarts are refused")
	}
}
