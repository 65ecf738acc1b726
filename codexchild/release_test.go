package codexchild

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// releaseLog records a turn's Release and OnSent calls, in order, with the
// child's state at the Release.
type releaseLog struct {
	mu      sync.Mutex
	calls   []string
	started bool // Status().Started at the Release
	alive   bool // Status().Running at the Release
	at      time.Time
	version string // Status().Version at the Release
}

func (l *releaseLog) request(b backend.Backend, req backend.TurnRequest) backend.TurnRequest {
	req.Release = func() {
		st := b.Status()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, "release")
		l.started, l.alive, l.at, l.version = st.Started, st.Running, time.Now(), st.Version
	}
	req.OnSent = func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, "sent")
	}
	return req
}

func (l *releaseLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// TestRelease: Turn calls Release once, before it first waits: before the
// child's start on a cold backend, after the request is written (before
// OnSent) on a warm one, before the write waits when the child does not
// read its stdin; first thing on app-server.
func TestRelease(t *testing.T) {
	t.Run("mcp-server", func(t *testing.T) {
		cfg, cwd := setupMock(t)
		b := newBackend(t, cfg)
		var cold, warm releaseLog
		res, err := b.Turn(ctxFor(t, 30*time.Second), cold.request(b, backend.TurnRequest{Prompt: "cold", Params: backend.ThreadParams{Cwd: cwd}}))
		if err != nil || res.IsError {
			t.Fatalf("Turn = %+v, %v", res, err)
		}
		if diff := cmp.Diff([]string{"release", "sent"}, cold.got()); diff != "" || cold.started {
			t.Errorf("cold backend: calls (-want +got):\n%s; child started at the yield: %v (want false)", diff, cold.started)
		}
		if _, err := b.Turn(ctxFor(t, 30*time.Second), warm.request(b, backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "warm"})); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"release", "sent"}, warm.got()); diff != "" || !warm.alive {
			t.Errorf("warm backend: calls (-want +got):\n%s; child running at the yield: %v", diff, warm.alive)
		}
	})
	t.Run("stdin_full", func(t *testing.T) {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		old := stdinWriteTimeout
		stdinWriteTimeout = 2 * time.Second
		t.Cleanup(func() { stdinWriteTimeout = old })
		b := newBackend(t, Config{Bin: exe, Env: []string{fakeChildEnv + "=nostdin", "GORACE=atexit_sleep_ms=0"}})
		if _, err := toolsOf(t, b).Tools(ctxFor(t, 10*time.Second)); err != nil { // the handshake; then it stops reading
			t.Fatal(err)
		}
		var l releaseLog
		start := time.Now()
		if _, err := b.Turn(ctxFor(t, 30*time.Second), l.request(b, backend.TurnRequest{Prompt: strings.Repeat("x", 1<<20)})); err == nil {
			t.Fatal("Turn into a wedged child succeeded")
		}
		// The write waited stdinWriteTimeout and failed; the Release came
		// before that wait, not after it.
		if diff := cmp.Diff([]string{"release"}, l.got()); diff != "" || !l.alive || l.at.Sub(start) > stdinWriteTimeout/2 {
			t.Errorf("calls (-want +got):\n%s; child running at the yield: %v (want true); yield after %s (want before the write's %s wait)",
				diff, l.alive, l.at.Sub(start), stdinWriteTimeout)
		}
	})
	t.Run("auto", func(t *testing.T) {
		cfg, cwd := setupMock(t)
		cfg.Kind = ""
		b, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close(ctxFor(t, 10*time.Second)) })
		var l releaseLog
		if res, err := b.Turn(ctxFor(t, 30*time.Second), l.request(b, backend.TurnRequest{Prompt: "hello", Params: backend.ThreadParams{Cwd: cwd}})); err != nil || res.IsError {
			t.Fatalf("Turn = %+v, %v", res, err)
		}
		// Before the probe: no backend was chosen (no version known).
		if diff := cmp.Diff([]string{"release", "sent"}, l.got()); diff != "" || l.version != "" {
			t.Errorf("calls (-want +got):\n%s; version known at the yield: %q (want none: before the probe)", diff, l.version)
		}
	})
	t.Run("app-server", func(t *testing.T) {
		cfg, cwd := setupMockApp(t)
		b := newAppBackend(t, cfg)
		var l releaseLog
		if res, err := b.Turn(ctxFor(t, 30*time.Second), l.request(b, backend.TurnRequest{Prompt: "hello", Params: backend.ThreadParams{Cwd: cwd}})); err != nil || res.IsError {
			t.Fatalf("Turn = %+v, %v", res, err)
		}
		if diff := cmp.Diff([]string{"release", "sent"}, l.got()); diff != "" || l.started {
			t.Errorf("calls (-want +got):\n%s; child started at the yield: %v (want false)", diff, l.started)
		}
	})
}
