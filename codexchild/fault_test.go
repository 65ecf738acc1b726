package codexchild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
)

// TestFaults runs mockcodex's fault keywords (mock only), in both protocols:
// each must give the specified error, promptly, and leave no goroutine or
// process behind (the leak check of newTestBackend).
func TestFaults(t *testing.T) {
	for _, tg := range []struct {
		kind  Kind
		setup func(t *testing.T) (Config, string)
	}{{KindMCPServer, setupMock}, {KindAppServer, setupMockApp}} {
		t.Run(string(tg.kind), func(t *testing.T) { testFaults(t, tg.setup) })
	}
}

func testFaults(t *testing.T, setup func(t *testing.T) (Config, string)) {
	type check func(t *testing.T, b backend.Backend, res *backend.Result, err error, elapsed time.Duration)
	exitCheck := func(want backend.ExitStatus) check {
		return func(t *testing.T, b backend.Backend, res *backend.Result, err error, elapsed time.Duration) {
			var ee *backend.ExitError
			if !errors.As(err, &ee) || !errors.Is(err, backend.ErrChildExited) {
				t.Fatalf("Turn = %+v, %v; want an *ExitError", res, err)
			}
			// (mockcodex's app-server mode logs nothing before a crash.)
			if ee.Stderr == "" && kindOf(b) == KindMCPServer {
				t.Errorf("ExitError.Stderr is empty, want the child's last stderr lines")
			}
			if ee.Status != want {
				t.Errorf("ExitError.Status = %+v, want %+v", ee.Status, want)
			}
			if elapsed > 5*time.Second {
				t.Errorf("the pending call failed %s after the turn started, want at once", elapsed)
			}
			// Later calls fail fast with the same report.
			start := time.Now()
			_, err2 := b.Turn(ctxFor(t, 10*time.Second), backend.TurnRequest{Prompt: "again"})
			var ee2 *backend.ExitError
			if !errors.As(err2, &ee2) || ee2.Status != want || time.Since(start) > 100*time.Millisecond {
				t.Errorf("next Turn = %v after %s, want the same *ExitError at once", err2, time.Since(start))
			}
			if m, ok := b.(*MCPServer); ok {
				if _, err := m.Tools(ctxFor(t, time.Second)); !errors.As(err, &ee2) {
					t.Errorf("Tools after exit = %v, want the *ExitError", err)
				}
			}
			if s, ok := b.(backend.Steerer); ok {
				if err := s.Steer(ctxFor(t, time.Second), "x", "y"); err == nil {
					t.Errorf("Steer after exit succeeded")
				}
			}
			if s := b.Status(); s.Running || s.Exit == nil || *s.Exit != want {
				t.Errorf("Status = %+v, want exited with %+v", s, want)
			}
		}
	}
	completes := func(t *testing.T, b backend.Backend, res *backend.Result, err error, elapsed time.Duration) {
		if err != nil || res.IsError || !strings.HasPrefix(res.Text, "MOCK_REPLY: ") {
			t.Fatalf("Turn = %+v, %v; want a completed MOCK_REPLY turn", res, err)
		}
	}
	for _, tc := range []struct {
		name    string
		prompt  string
		timeout time.Duration
		env     []string
		check   check
		logs    map[string]int // log message → at least this many records
	}{
		{"crash_code", "CRASH=3 mid turn", 0, nil, exitCheck(backend.ExitStatus{Code: 3}), nil},
		{"crash_sigkill", "CRASH=SIGKILL mid turn", 0, nil, exitCheck(backend.ExitStatus{Code: -1, Signal: "killed"}), nil},
		{"start_failure", "never sent", 0, []string{"MOCKCODEX_START_FAIL=7"}, exitCheck(backend.ExitStatus{Code: 7}), nil},
		{"hang", "HANG please", 2 * time.Second, nil, func(t *testing.T, b backend.Backend, res *backend.Result, err error, elapsed time.Duration) {
			var te *backend.TimeoutError
			if !errors.As(err, &te) {
				t.Fatalf("Turn = %+v, %v; want a *TimeoutError", res, err)
			}
			if elapsed > 4*time.Second {
				t.Errorf("Turn returned after %s, want about 2s", elapsed)
			}
		}, nil},
		{"garbage", "GARBAGE then reply", 0, nil, completes, map[string]int{"codex child wrote a bad line on stdout; skipped": 3}},
		// 4 MB in 1 KiB lines: all of it must be drained and logged.
		{"stderr_flood", "STDERR_FLOOD=4000000 then reply", 0, nil, completes, map[string]int{"codex child stderr": 3900}},
		{"many_events", "EVENTS=2000 then reply", 0, nil, completes, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, cwd := setup(t)
			cfg.Env = append(cfg.Env, tc.env...)
			var exits []backend.ExitStatus
			var mu sync.Mutex
			cfg.OnExit = func(s backend.ExitStatus) { mu.Lock(); exits = append(exits, s); mu.Unlock() }
			counts := newCountingHandler(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
			cfg.Logger = slog.New(counts)
			b := newTestBackend(t, cfg)
			start := time.Now()
			res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: tc.prompt, Params: backend.ThreadParams{Cwd: cwd}, Timeout: tc.timeout})
			tc.check(t, b, res, err, time.Since(start))
			// The child may still be writing (the flood runs beside the
			// turn): give the logs a moment before stopping it.
			for msg, n := range tc.logs {
				for deadline := time.Now().Add(5 * time.Second); counts.count(msg) < n && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if err := b.Close(ctxFor(t, 10*time.Second)); err != nil {
				t.Errorf("Close: %v", err)
			}
			for msg, n := range tc.logs {
				if got := counts.count(msg); got < n {
					t.Errorf("log %q: %d records, want at least %d", msg, got, n)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(exits) != 1 {
				t.Errorf("OnExit called %d times, want once", len(exits))
			}
		})
	}
}

// TestStartFailureMissingBinary: a binary that cannot be started fails the
// call, and every later one, with the start error.
func TestStartFailureMissingBinary(t *testing.T) {
	b := newBackend(t, Config{Bin: "/nonexistent/codex"})
	_, err := b.Turn(ctxFor(t, 5*time.Second), backend.TurnRequest{Prompt: "x"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/codex") {
		t.Fatalf("Turn = %v, want a start error", err)
	}
	if _, err2 := toolsOf(t, b).Tools(ctxFor(t, 5*time.Second)); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Tools = %v, want the same start error", err2)
	}
	if s := b.Status(); s.Started || s.Running {
		t.Errorf("Status = %+v", s)
	}
}

// TestCloseBeforeStart: Close of an unused backend starts nothing, and
// later calls fail with ErrClosed.
func TestCloseBeforeStart(t *testing.T) {
	b := newBackend(t, Config{Bin: "/nonexistent/codex"})
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Turn(context.Background(), backend.TurnRequest{Prompt: "x"}); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("Turn after Close = %v, want ErrClosed", err)
	}
}

// TestClosePendingTurn: Close during a running turn fails it with an
// *ExitError and stops the child within the graces.
func TestClosePendingTurn(t *testing.T) {
	cfg, cwd := setupMock(t)
	cfg.StopGrace = 500 * time.Millisecond
	b := newBackend(t, cfg)
	rec := newRecorder(nil)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "SLOW=30 closing", Params: backend.ThreadParams{Cwd: cwd}, Handler: rec})
		errc <- err
	}()
	rec.waitType(t, "task_started", 10*time.Second)
	start := time.Now()
	if err := b.Close(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; !errors.Is(err, backend.ErrChildExited) {
		t.Errorf("pending Turn = %v, want an *ExitError", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s", d)
	}
}

// TestCtxCancelInterrupts: cancelling a Turn's ctx interrupts the turn in
// Codex and returns the interrupted Result with ctx's error.
func TestCtxCancelInterrupts(t *testing.T) {
	cfg, cwd := setupMock(t)
	b := newBackend(t, cfg)
	rec := newRecorder(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		rec.waitType(t, "task_started", 10*time.Second)
		cancel()
	}()
	res, err := b.Turn(ctx, backend.TurnRequest{Prompt: "SLOW=30 EVENTS=2 cancel me", Params: backend.ThreadParams{Cwd: cwd}, Handler: rec})
	if !errors.Is(err, context.Canceled) || res == nil || res.Status != "interrupted" || !res.IsError {
		t.Fatalf("Turn = %+v, %v; want interrupted and context.Canceled", res, err)
	}
}

// TestOnEventOrphans: events of a forwarded tools/call go to OnEvent with
// the caller's request id.
func TestOnEventOrphans(t *testing.T) {
	cfg, cwd := setupMock(t)
	var mu sync.Mutex
	var got []backend.Event
	cfg.OnEvent = func(e backend.Event) { mu.Lock(); got = append(got, e); mu.Unlock() }
	cfg.Logger = slog.New(slog.DiscardHandler)
	b := newBackend(t, cfg)
	req := mustRequest(t, `{"jsonrpc":"2.0","id":"up-1","method":"tools/call","params":{"name":"codex","arguments":{"prompt":"forwarded","cwd":"`+cwd+`"}}}`)
	resp, err := passOf(t, b).Forward(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID != req.ID || !strings.Contains(string(resp.Result), "MOCK_REPLY: forwarded") {
		t.Errorf("Forward = %s %s", resp.ID, resp.Result)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no events reached OnEvent")
	}
	for _, e := range got {
		if e.RequestID != req.ID {
			t.Errorf("event %s RequestID = %s, want %s", e.Type, e.RequestID, req.ID)
		}
	}
}

// TestThreadBusy: a second turn on a thread whose turn is running fails
// with ErrThreadBusy and leaves the running turn alone.
func TestThreadBusy(t *testing.T) {
	cfg, cwd := setupMock(t)
	b := newBackend(t, cfg)
	rec := newRecorder(nil)
	done := make(chan *backend.Result, 1)
	go func() {
		res, _ := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "SLOW=30 busy", Params: backend.ThreadParams{Cwd: cwd}, Handler: rec})
		done <- res
	}()
	rec.waitType(t, "task_started", 10*time.Second)
	events, _ := rec.snapshot()
	thread := events[len(events)-1].ThreadID
	if _, err := b.Turn(ctxFor(t, 5*time.Second), backend.TurnRequest{ThreadID: thread, Prompt: "me too"}); !errors.Is(err, backend.ErrThreadBusy) {
		t.Errorf("second Turn = %v, want ErrThreadBusy", err)
	}
	if err := b.Interrupt(ctxFor(t, time.Second), thread); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res == nil || res.Status != "interrupted" {
		t.Errorf("first Turn = %+v, want interrupted", res)
	}
}

// TestGarbageFlood: a child that writes many bad lines on stdout gets a
// few log lines and a count of the rest, not one line each (a `yes
// garbage` child filled the disk at 100 MB/s); one that writes nothing but
// garbage is killed, and the turn's error says why.
func TestGarbageFlood(t *testing.T) {
	for _, tg := range []struct {
		kind  Kind
		setup func(t *testing.T) (Config, string)
	}{{KindMCPServer, setupMock}, {KindAppServer, setupMockApp}} {
		t.Run(string(tg.kind), func(t *testing.T) {
			t.Run("limited", func(t *testing.T) {
				cfg, cwd := tg.setup(t)
				counts := newCountingHandler(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
				cfg.Logger = slog.New(counts)
				b := newTestBackend(t, cfg)
				res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "GARBAGE_FLOOD=3000 then reply", Params: backend.ThreadParams{Cwd: cwd}})
				if err != nil || !strings.HasPrefix(res.Text, "MOCK_REPLY: ") {
					t.Fatalf("Turn = %+v, %v; want the reply after the garbage", res, err)
				}
				if err := b.Close(ctxFor(t, 10*time.Second)); err != nil {
					t.Errorf("Close: %v", err)
				}
				if got := counts.count("codex child wrote a bad line on stdout; skipped"); got < 1 || got > 2*childproc.GarbageLogPerWindow {
					t.Errorf("%d bad lines logged one by one, want 1 to %d", got, 2*childproc.GarbageLogPerWindow)
				}
				if got := counts.count("codex child wrote more bad lines on stdout; not logged"); got < 1 {
					t.Errorf("the dropped bad lines were never counted in the log")
				}
			})
			t.Run("broken", func(t *testing.T) {
				cfg, cwd := tg.setup(t)
				b := newTestBackend(t, cfg)
				start := time.Now()
				_, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: fmt.Sprintf("GARBAGE_FLOOD=%d", childproc.MaxGarbageRun+5000), Params: backend.ThreadParams{Cwd: cwd}})
				var ee *backend.ExitError
				// It says how many lines it wrote (at least the limit, at
				// most what the mock writes: the flood and, since the
				// prompt holds the GARBAGE keyword too, its three bad
				// lines), not the limit alone.
				flooded := regexp.MustCompile(`^codex child process stopped: it wrote (\d+) lines in a row that are not JSON-RPC on stdout, and 10000 is the limit \(killed by signal killed\)$`)
				if !errors.As(err, &ee) || !flooded.MatchString(ee.Error()) || !errors.Is(err, backend.ErrNotJSONRPC) || !errors.Is(err, backend.ErrChildExited) {
					t.Fatalf("Turn = %v; want an *backend.ExitError that says the child was stopped for its garbage (%s), wrapping backend.ErrNotJSONRPC", err, flooded)
				}
				want := ee.Error()
				if n, _ := strconv.Atoi(flooded.FindStringSubmatch(want)[1]); n < childproc.MaxGarbageRun || n > childproc.MaxGarbageRun+5000+3 {
					t.Errorf("it says %d lines, want %d to %d", n, childproc.MaxGarbageRun, childproc.MaxGarbageRun+5000+3)
				}
				// How it died says so too: agent_status and the crash
				// records read it from Status.
				if st := b.Status(); st.Exit == nil || st.Exit.String() != strings.TrimPrefix(want, "codex child process ") {
					t.Errorf("Status().Exit = %v, want the reason", st.Exit)
				}
				// So does every later call.
				if _, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "again", Params: backend.ThreadParams{Cwd: cwd}}); err == nil || err.Error() != want {
					t.Errorf("a later Turn = %v, want %q", err, want)
				}
				if d := time.Since(start); d > 20*time.Second {
					t.Errorf("the broken child was stopped after %s", d)
				}
				_ = b.Close(ctxFor(t, 10*time.Second))
			})
		})
	}
}

// TestHandshakeTimeout: a child stuck at start fails the first call within
// the handshake timeout (not a fixed 60 s), is stopped, and every later
// call fails at once with the same error.
func TestHandshakeTimeout(t *testing.T) {
	for _, tg := range []struct {
		kind  Kind
		setup func(t *testing.T) (Config, string)
	}{{KindMCPServer, setupMock}, {KindAppServer, setupMockApp}} {
		t.Run(string(tg.kind), func(t *testing.T) {
			cfg, cwd := tg.setup(t)
			cfg.Env = append(cfg.Env, "MOCKCODEX_START_HANG=1")
			cfg.DefaultTimeout = time.Second // the handshake fits within a turn's timeout
			b := newTestBackend(t, cfg)
			start := time.Now()
			_, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "hello", Params: backend.ThreadParams{Cwd: cwd}})
			if !errors.Is(err, backend.ErrHandshake) || !strings.Contains(err.Error(), "no answer within 1s") {
				t.Fatalf("Turn = %v, want ErrHandshake after 1s", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the first call failed after %s, want about 1s", d)
			}
			start = time.Now()
			if _, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "again", Params: backend.ThreadParams{Cwd: cwd}}); !errors.Is(err, backend.ErrHandshake) || time.Since(start) > time.Second {
				t.Errorf("next Turn = %v after %s, want ErrHandshake at once", err, time.Since(start))
			}
			_ = b.Close(ctxFor(t, 10*time.Second))
		})
	}
}
