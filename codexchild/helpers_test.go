package codexchild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/guard"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockcodex"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// mockcodexBin runs this test binary as mockcodex (package mockcodex's
// Main): a link to it named "mockcodex", made by TestMain.
var mockcodexBin string

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "mockcodex" {
		os.Exit(mockcodex.Main())
	}
	if len(os.Args) > 1 && os.Args[1] == guardArg {
		os.Exit(guard.Main(os.Args[2:])) // the guard, as serve runs it (notfound_test.go)
	}
	if os.Getenv(fakeChildEnv) != "" {
		os.Exit(runFakeChild())
	}
	if os.Getenv(fakeAppEnv) != "" {
		os.Exit(runFakeApp())
	}
	if os.Getenv(pongServerEnv) == "1" {
		os.Exit(runPongServer())
	}
	dir, err := os.MkdirTemp("", "codexchild-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	mockcodexBin = filepath.Join(dir, "mockcodex")
	exe, err := os.Executable()
	if err == nil {
		err = os.Symlink(exe, mockcodexBin)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "codexchild: installing this test binary as mockcodex: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	os.Setenv("CODEXCHILD_EXAMPLE_BIN", mockcodexBin)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mockBin returns the path that runs mockcodex (see mockcodexBin).
func mockBin(t testing.TB) string {
	t.Helper()
	return mockcodexBin
}

type tLogWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		line := strings.TrimRight(string(p), "\n")
		if len(line) > 600 {
			line = line[:600] + "…"
		}
		w.t.Log(line)
	}
	return len(p), nil
}

func (w *tLogWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// checkNoLeaks records the goroutines running now and, at cleanup (after
// the backends are closed: register it first), fails the test if a
// goroutine of this package or of os/exec is left, or if one of the
// child processes in pids is still alive.
func checkNoLeaks(t testing.TB, pids func() []int) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			leaked := leakedGoroutines()
			var alive []int
			if pids != nil {
				for _, pid := range pids() {
					if pid > 0 && (syscall.Kill(pid, 0) == nil || syscall.Kill(-pid, 0) == nil) {
						alive = append(alive, pid)
					}
				}
			}
			if len(leaked) == 0 && len(alive) == 0 {
				return
			}
			if time.Now().After(deadline) {
				for _, pid := range alive {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
				t.Errorf("leak: %d goroutine(s) and child process(es) %v left after the test:\n%s", len(leaked), alive, strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// leakedGoroutines returns the stacks of goroutines that run code of this
// package's backends (and of agent clients)
// or of os/exec.
func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		s := string(g)
		if strings.Contains(s, "codexchild.checkNoLeaks") || strings.Contains(s, "testing.tRunner") && !strings.Contains(s, "codexchild.(*") ||
			strings.Contains(s, "sshtest.(*Server)") { // a test's sshd, stopped after the check
			continue
		}
		if strings.Contains(s, "codexchild.(*MCPServer)") || strings.Contains(s, "codexchild.(*AppServer)") ||
			strings.Contains(s, "codexchild.(*autoBackend)") || strings.Contains(s, "childproc.(*Process)") || strings.Contains(s, "os/exec.") ||
			strings.Contains(s, "acp.(*Client)") {
			out = append(out, s)
		}
	}
	return out
}

// target is one implementation of a Codex protocol the contract runs
// against.
type target struct {
	name string
	kind Kind
	// setup returns the config of a backend for the target (Bin, Env, Dir,
	// Kind) and the cwd for threads; it registers its own cleanups. Two
	// backends made from one config share Codex's storage (CODEX_HOME).
	setup func(t *testing.T) (Config, string)
	real  bool
}

var targets = []target{
	{name: "mock", kind: KindMCPServer, setup: setupMock},
	{name: "real", kind: KindMCPServer, setup: setupReal, real: true},
	{name: "app-mock", kind: KindAppServer, setup: setupMockApp},
	{name: "app-real", kind: KindAppServer, setup: setupRealApp, real: true},
}

func setupMock(t *testing.T) (Config, string) {
	bin := mockBin(t)
	dir := t.TempDir()
	return Config{Bin: bin, Dir: dir, Kind: KindMCPServer, Env: []string{"MOCKCODEX_LOG=" + filepath.Join(dir, "mockcodex.log")}}, dir
}

func setupReal(t *testing.T) (Config, string) {
	bin := realcodex.Bin(t, realcodex.MCPServer)
	mock, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	home := realcodex.NewHome(t, mock.URL(), nil)
	return Config{Bin: bin, Dir: home.WorkDir, Env: home.Env(), ReplaceEnv: true, Kind: KindMCPServer}, home.WorkDir
}

// setupMockApp is mockcodex as the tested Codex app-server, with its own
// CODEX_HOME (its rollouts let a new process resume a thread).
func setupMockApp(t *testing.T) (Config, string) {
	bin := mockBin(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "codex-home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return Config{Bin: bin, Dir: dir, Kind: KindAppServer, Env: []string{
		"MOCKCODEX_LOG=" + filepath.Join(dir, "mockcodex.log"), "MOCKCODEX_VERSION=" + TestedAppServerCodex, "CODEX_HOME=" + home}}, dir
}

// setupRealApp is the real Codex app-server (the pinned version) on the
// loopback model.
func setupRealApp(t *testing.T) (Config, string) {
	bin := realcodex.Bin(t, realcodex.AppServer)
	mock, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	home := realcodex.NewHome(t, mock.URL(), nil)
	return Config{Bin: bin, Dir: home.WorkDir, Env: home.Env(), ReplaceEnv: true, Kind: KindAppServer}, home.WorkDir
}

// newBackend starts nothing yet: it returns an mcp-server backend for cfg,
// closed at cleanup, with the leak check armed.
func newBackend(t *testing.T, cfg Config) *MCPServer {
	t.Helper()
	cfg.Kind = KindMCPServer
	return newTestBackend(t, cfg).(*MCPServer)
}

// newAppBackend is newBackend for the app-server backend.
func newAppBackend(t *testing.T, cfg Config) *AppServer {
	t.Helper()
	cfg.Kind = KindAppServer
	return newTestBackend(t, cfg).(*AppServer)
}

// newTestBackend returns New(cfg) (nothing started yet), closed at cleanup,
// with the leak check armed.
func newTestBackend(t *testing.T, cfg Config) backend.Backend {
	t.Helper()
	lw := &tLogWriter{t: t}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	var b backend.Backend
	checkNoLeaks(t, func() []int {
		if s := b.Status(); s.PID > 0 {
			return []int{s.PID}
		}
		return nil
	})
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		lw.stop()
	})
	return b
}

// recorder is a Handler that records events and answers approvals with a
// fixed decision.
type recorder struct {
	decide func(*backend.Approval) backend.Decision // nil: deny
	// then, when set, is called with each event once it is recorded, on
	// the backend's reader goroutine.
	then func(backend.Event)

	mu        sync.Mutex
	events    []backend.Event
	approvals []*backend.Approval
	seen      chan string // event types, non-blocking
}

func newRecorder(decide func(*backend.Approval) backend.Decision) *recorder {
	return &recorder{decide: decide, seen: make(chan string, 4096)}
}

func (r *recorder) Event(e backend.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	select {
	case r.seen <- e.Type:
	default:
	}
	if r.then != nil {
		r.then(e)
	}
}

func (r *recorder) Approval(a *backend.Approval) {
	r.mu.Lock()
	r.approvals = append(r.approvals, a)
	r.mu.Unlock()
	d := backend.Decision{Kind: backend.Deny}
	if r.decide != nil {
		d = r.decide(a)
	}
	if err := a.Respond(d); err != nil {
		panic(err)
	}
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ts []string
	for _, e := range r.events {
		ts = append(ts, e.Type)
	}
	return ts
}

func (r *recorder) snapshot() ([]backend.Event, []*backend.Approval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]backend.Event(nil), r.events...), append([]*backend.Approval(nil), r.approvals...)
}

// waitType waits until an event of type typ was seen.
func (r *recorder) waitType(t *testing.T, typ string, within time.Duration) {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case got := <-r.seen:
			if got == typ {
				return
			}
		case <-timer.C:
			t.Fatalf("no %s event within %s; saw %v", typ, within, r.types())
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mustRequest parses a JSON-RPC message.
func mustRequest(t testing.TB, s string) *jsonrpcframe.Message {
	t.Helper()
	m, err := jsonrpcframe.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// countingHandler counts log records by message and passes them on.
type countingHandler struct {
	slog.Handler
	mu     *sync.Mutex
	counts map[string]int
}

func newCountingHandler(next slog.Handler) *countingHandler {
	return &countingHandler{Handler: next, mu: &sync.Mutex{}, counts: map[string]int{}}
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.counts[r.Message]++
	h.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{Handler: h.Handler.WithAttrs(as), mu: h.mu, counts: h.counts}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{Handler: h.Handler.WithGroup(name), mu: h.mu, counts: h.counts}
}

func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[msg]
}

// kindOf is b's protocol, as its Kind method says (KindAuto for an auto
// backend that has not decided yet).
func kindOf(b backend.Backend) Kind { return b.(interface{ Kind() Kind }).Kind() }

// toolsOf is b's tools/list (mcp-server, or the auto backend).
func toolsOf(t *testing.T, b backend.Backend) interface {
	Tools(context.Context) (json.RawMessage, error)
} {
	t.Helper()
	tb, ok := b.(interface {
		Tools(context.Context) (json.RawMessage, error)
	})
	if !ok {
		t.Fatalf("%T has no Tools", b)
	}
	return tb
}

// passOf is b as a Passthrough.
func passOf(t *testing.T, b backend.Backend) Passthrough {
	t.Helper()
	p, ok := b.(Passthrough)
	if !ok {
		t.Fatalf("%T is no Passthrough", b)
	}
	return p
}

// steerOf is b as a Steerer.
func steerOf(t *testing.T, b backend.Backend) backend.Steerer {
	t.Helper()
	s, ok := b.(backend.Steerer)
	if !ok {
		t.Fatalf("%T is no Steerer", b)
	}
	return s
}
