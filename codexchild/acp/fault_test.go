package acp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
)

// TestHandshakeFails: an agent that never answers initialize, or answers
// another protocol version, is stopped (fakeConfig checks that no process
// is left) and Start fails with ErrHandshake.
func TestHandshakeFails(t *testing.T) {
	tests := []struct {
		name, env string
		want      error
	}{
		{"hangs at initialize", "FAKEACP_HANG_INIT=1", acp.ErrTimeout},
		{"speaks version 2", "FAKEACP_VERSION=2", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := fakeConfig(t, tc.env)
			cfg.InitTimeout = 500 * time.Millisecond
			c, err := acp.Start(t.Context(), cfg)
			if c != nil {
				c.Close(t.Context())
			}
			if !errors.Is(err, acp.ErrHandshake) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Start: %v, want ErrHandshake (and %v)", err, tc.want)
			}
		})
	}
	t.Run("no such command", func(t *testing.T) {
		_, err := acp.Start(t.Context(), acp.Config{Command: filepath.Join(t.TempDir(), "nope")})
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Start: %v, want os.ErrNotExist", err)
		}
	})
}

// TestGarbage: lines on stdout that are not JSON-RPC are skipped and
// counted; the turn goes on.
func TestGarbage(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig(t))
	s := newSession(t, c, acp.SessionParams{})
	res := prompt(t, s, "say before", "garbage 50", "say after")
	if res.Text != "after" || len(res.Messages) != 2 {
		t.Errorf("result %+v, want two messages ending in after", res)
	}
	if got := c.Status().GarbageLines; got != 50 {
		t.Errorf("GarbageLines = %d, want 50", got)
	}
}

// TestCrash: an agent that dies mid-turn fails the turn with an
// *ExitError that says how it died, and its last stderr; the client is
// dead, later calls fail the same way.
func TestCrash(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig(t))
	s := newSession(t, c, acp.SessionParams{})
	_, err := s.Prompt(t.Context(), acp.TurnRequest{Text: "say partial\ncrash 3"})
	var ee *acp.ExitError
	if !errors.As(err, &ee) || !errors.Is(err, acp.ErrAgentExited) {
		t.Fatalf("Prompt: %v, want an *ExitError", err)
	}
	if ee.Status != (acp.ExitStatus{Code: 3}) || ee.During != "session/prompt" || !strings.Contains(ee.Stderr, "crashing as told") {
		t.Errorf("exit error %+v, want code 3 during session/prompt with the stderr", ee)
	}
	if !strings.Contains(err.Error(), "exited with code 3 during session/prompt") {
		t.Errorf("message %q does not say how it died", err)
	}
	st := c.Status()
	if st.State != acp.StateDead || st.Exit == nil || st.Exit.Code != 3 {
		t.Errorf("status %+v, want dead with code 3", st)
	}
	if _, err := s.Prompt(t.Context(), acp.TurnRequest{Text: "say hi"}); !errors.Is(err, acp.ErrAgentExited) {
		t.Errorf("Prompt after the death: %v, want ErrAgentExited", err)
	}
	if _, err := c.NewSession(t.Context(), acp.SessionParams{Cwd: t.TempDir()}); !errors.Is(err, acp.ErrAgentExited) {
		t.Errorf("NewSession after the death: %v, want ErrAgentExited", err)
	}
}

// TestNoOrphan: a process the agent started, which ignores SIGTERM and
// its stdin's end (as Gemini's relaunched child does), does not outlive
// Close, nor the agent's crash: the client kills the process group.
func TestNoOrphan(t *testing.T) {
	for _, end := range []string{"close", "crash"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			c := start(t, fakeConfig(t))
			s := newSession(t, c, acp.SessionParams{})
			pidfile := filepath.Join(t.TempDir(), "pid")
			prompt(t, s, "spawn "+pidfile, "say spawned")
			b, err := os.ReadFile(pidfile)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(string(b))
			if !alive(pid) {
				t.Fatalf("the agent's child %d is not running", pid)
			}
			switch end {
			case "close":
				if err := c.Close(context.Background()); err != nil {
					t.Errorf("Close: %v", err)
				}
			case "crash":
				if _, err := s.Prompt(t.Context(), acp.TurnRequest{Text: "crash 1"}); !errors.Is(err, acp.ErrAgentExited) {
					t.Errorf("Prompt: %v, want ErrAgentExited", err)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the agent's child %d outlived the agent (%s)", pid, end)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestNoGoroutineLeak: after Close nothing of the client runs on (not
// parallel: the parallel tests wait until it is over); an Asker still
// deciding when the agent dies has returned by the time Close does.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := fakeConfig(t)
	cfg.OnEvent = func(acp.Event) {}
	var asked atomic.Bool
	cfg.Asker = acp.AskerFunc(func(ctx context.Context, req acp.PermissionRequest) acp.Decision {
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // an Asker that takes its time to notice
		asked.Store(true)
		return acp.Cancelled
	})
	c, err := acp.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, c, acp.SessionParams{Mode: "default"})
	prompt(t, s, "say one")
	go s.Prompt(context.Background(), acp.TurnRequest{Text: "ask t1"})
	waitState(t, c, acp.StateAwaitingApproval)
	if err := c.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !asked.Load() {
		t.Error("Close returned while the Asker was still deciding")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
