package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// stderrLines are what the "stderr" helper writes to its stderr: more
// lines than the tail keeps, some coloured as Codex colours its log, one
// longer than a line may be.
var stderrLines = func() []string {
	var lines []string
	for i := range 22 {
		lines = append(lines, fmt.Sprintf("plain line %d", i))
	}
	return append(lines,
		"\x1b[2m2026-11-25T08:00:00.1Z\x1b[0m \x1b[31mERROR\x1b[0m \x1b[2mcodex_core\x1b[0m: it failed",
		strings.Repeat("x", 10000),
		"WARN the last line")
}()

// helperConfig is a Config that runs the test binary as a helper child
// (main_test.go) in mode with args.
func helperConfig(t *testing.T, mode string, args ...string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Name:   "test child",
		Spec:   Spec{Path: exe, Args: args, Env: append(os.Environ(), helperEnv+"="+mode), AddEnv: []string{helperEnv + "=" + mode}},
		Grace:  200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}
}

// start starts cfg's child and reads its stdout to the end in the
// background; the returned function waits for that reading and returns
// what was read. The child is stopped at the end of the test.
func start(t *testing.T, cfg Config) (*Process, func() string) {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	var out strings.Builder
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer p.StdoutDone()
		_, _ = io.Copy(&out, p.Stdout())
	}()
	return p, func() string { <-read; return out.String() }
}

// waitDone waits for the child's end, failing the test after d.
func waitDone(t *testing.T, p *Process, d time.Duration) *ExitError {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(d):
		t.Fatalf("the child has not ended after %s", d)
	}
	return p.Err()
}

// TestExitStatus: how a child died, in words.
func TestExitStatus(t *testing.T) {
	tests := []struct {
		status ExitStatus
		want   string
	}{
		{ExitStatus{Code: 0}, "exited with code 0"},
		{ExitStatus{Code: 3}, "exited with code 3"},
		{ExitStatus{Code: -1, Signal: "terminated"}, "killed by signal terminated"},
		{ExitStatus{Code: -1, Signal: "killed", Reason: "it wrote 10412 lines in a row that are not JSON-RPC on stdout, and 10000 is the limit"},
			"stopped: it wrote 10412 lines in a row that are not JSON-RPC on stdout, and 10000 is the limit (killed by signal killed)"},
		{ExitStatus{Code: 0, Reason: "it did not read its stdin for 30s"},
			"stopped: it did not read its stdin for 30s (it exited with code 0 while it was being killed)"},
	}
	for _, tt := range tests {
		if got := tt.status.String(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.status, got, tt.want)
		}
	}
}

// TestCommand: what is started for a Spec, with a Launcher and a guard.
func TestCommand(t *testing.T) {
	spec := Spec{Path: "codex", Args: []string{"app-server"}, Env: []string{"A=1"}, Dir: "/work"}
	ssh := func(s Spec) (Spec, error) {
		return Spec{Path: "ssh", Args: append([]string{"-T", "host", "--", "cd", s.Dir, "&&", s.Path}, s.Args...)}, nil
	}
	tests := []struct {
		name   string
		launch Launcher
		guard  []string
		want   Spec
	}{
		{"here", nil, nil, spec},
		{"guarded", nil, []string{"/bin/atm", "codex-guard"},
			Spec{Path: "/bin/atm", Args: []string{"codex-guard", "codex", "app-server"}, Env: []string{"A=1"}, Dir: "/work"}},
		{"launched", ssh, nil,
			Spec{Path: "ssh", Args: []string{"-T", "host", "--", "cd", "/work", "&&", "codex", "app-server"}}},
		{"launched and guarded", ssh, []string{"/bin/atm", "codex-guard"},
			Spec{Path: "/bin/atm", Args: []string{"codex-guard", "ssh", "-T", "host", "--", "cd", "/work", "&&", "codex", "app-server"}}},
	}
	for _, tt := range tests {
		cfg := Config{Spec: spec, Launch: tt.launch, Guard: tt.guard}
		got, err := cfg.command()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	cfg := Config{Spec: spec, Launch: func(Spec) (Spec, error) { return Spec{}, errors.New("no such host") }}
	if _, err := Start(cfg); err == nil || !strings.Contains(err.Error(), "no such host") {
		t.Errorf("Start with a failing Launcher: %v", err)
	}
}

// TestExit: every way a child ends is an *ExitError with its status,
// wrapping ErrExited, and the owner has read all it wrote.
func TestExit(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		mode  string
		args  []string
		guard bool
		stop  bool          // Stop it, else wait for its own end
		grace time.Duration // optional: 0 means helperConfig's
		want  ExitStatus
	}{
		{name: "exits 3", mode: "exit", args: []string{"3"}, want: ExitStatus{Code: 3}},
		{name: "exits 3 through the guard", mode: "exit", args: []string{"3"}, guard: true, want: ExitStatus{Code: 3}},
		{name: "ends at stdin's end", mode: "echo", stop: true, grace: 10 * time.Second, want: ExitStatus{Code: 0}},
		{name: "ends at SIGTERM", mode: "nostdin", stop: true, want: ExitStatus{Code: -1, Signal: "terminated"}},
		{name: "ignores SIGTERM", mode: "sleep", stop: true, want: ExitStatus{Code: -1, Signal: "killed"}},
		{name: "ignores SIGTERM in the guard", mode: "sleep", guard: true, stop: true, want: ExitStatus{Code: -1, Signal: "killed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := helperConfig(t, tt.mode, tt.args...)
			if tt.guard {
				cfg.Guard = []string{exe, guardArg}
			}
			if tt.grace != 0 {
				cfg.Grace = tt.grace
			}
			p, _ := start(t, cfg)
			if tt.stop {
				begin := time.Now()
				if err := p.Stop(context.Background()); err != nil {
					t.Errorf("Stop: %v", err)
				}
				if d := time.Since(begin); d > 2*cfg.Grace+5*time.Second {
					t.Errorf("Stop took %s, want at most two graces of %s", d, cfg.Grace)
				}
			}
			ee := waitDone(t, p, 10*time.Second)
			if diff := cmp.Diff(tt.want, ee.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if !errors.Is(ee, ErrExited) || ee.Cause != nil {
				t.Errorf("%v: want ErrExited and no cause", ee)
			}
			if want := "test child process " + tt.want.String(); ee.Error() != want {
				t.Errorf("message %q, want %q", ee.Error(), want)
			}
		})
	}
	t.Run("stdout before the end", func(t *testing.T) {
		p, out := start(t, helperConfig(t, "echo"))
		msg := strings.Repeat("a line of the child's stdout\n", 10000)
		if _, err := p.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		_ = p.Stop(context.Background())
		waitDone(t, p, 10*time.Second)
		if got := out(); got != msg {
			t.Errorf("read %d bytes of stdout before the end, want %d", len(got), len(msg))
		}
	})
}

// TestKilledForGarbage: a child the owner kills with the limiter's cause
// says why and how many lines it wrote (the lines the owner drained after
// the kill count too: more than the limit, as the child writes on until
// the kill lands), in its status and its error, and the causes survive:
// errors.Is finds ErrNotJSONRPC and ErrExited.
func TestKilledForGarbage(t *testing.T) {
	cfg := helperConfig(t, "garbage")
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan int, 1)
	go func() {
		defer p.StdoutDone()
		r := jsonrpcframe.NewLineReader(p.Stdout(), nil)
		g := NewGarbage(cfg.Logger, cfg.Name, nil)
		for {
			_, err := r.Read()
			var me *jsonrpcframe.MessageError
			if !errors.As(err, &me) {
				return
			}
			if g.Bad(me) {
				p.Kill(g.Err())
				g.Drain(r)
				drained <- g.Run()
				return
			}
		}
	}()
	ee := waitDone(t, p, 30*time.Second)
	n := <-drained
	if n <= MaxGarbageRun {
		t.Errorf("counted %d lines; want more than the %d before the kill (the child writes without pause)", n, MaxGarbageRun)
	}
	reason := fmt.Sprintf("it wrote %d lines in a row that are not JSON-RPC on stdout, and %d is the limit", n, MaxGarbageRun)
	if diff := cmp.Diff(ExitStatus{Code: -1, Signal: "killed", Reason: reason}, ee.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if want := "test child process stopped: " + reason + " (killed by signal killed)"; ee.Error() != want {
		t.Errorf("message %q, want %q", ee.Error(), want)
	}
	wrapped := fmt.Errorf("turn: %w", ee)
	if !errors.Is(wrapped, ErrNotJSONRPC) || !errors.Is(wrapped, ErrExited) || errors.Is(wrapped, ErrStdinBlocked) {
		t.Errorf("%v: want ErrNotJSONRPC and ErrExited underneath", wrapped)
	}
	// A kill after the death is no cause of it.
	p.Kill(Because("too late"))
	if got := p.Err().Status.Reason; got != reason {
		t.Errorf("reason after a later Kill: %q", got)
	}
}

// TestWriteBlocked: a write the pipe cannot take waits for the reader
// under WriteTimeout, and that deadline does not outlive it; a child that
// does not read its stdin for that long is killed (ErrStdinBlocked).
func TestWriteBlocked(t *testing.T) {
	t.Run("waits", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		p := &Process{name: "test child", stdin: w, in: jsonrpcframe.NewPipe(w), log: slog.New(slog.DiscardHandler), writeTimeout: 300 * time.Millisecond}
		var blocked int
		p.SetBlocked(func() { blocked++ })
		read := make(chan int)
		go func() {
			time.Sleep(50 * time.Millisecond) // the pipe fills up first
			n, _ := io.Copy(io.Discard, r)
			read <- int(n)
		}()
		big := make([]byte, 2<<20)
		if n, err := p.Write(big); n != len(big) || err != nil {
			t.Fatalf("Write(2 MiB) = %d, %v", n, err)
		}
		time.Sleep(2 * p.writeTimeout)
		if n, err := p.Write([]byte("later\n")); n != 6 || err != nil {
			t.Fatalf("a later Write = %d, %v (the deadline of the blocked write must not stay)", n, err)
		}
		w.Close()
		if got := <-read; got != len(big)+6 {
			t.Errorf("the reader got %d bytes, want %d", got, len(big)+6)
		}
		if blocked != 1 {
			t.Errorf("the blocked hook ran %d times, want 1 (for the write that waited)", blocked)
		}
	})
	t.Run("killed", func(t *testing.T) {
		cfg := helperConfig(t, "nostdin")
		cfg.WriteTimeout = 300 * time.Millisecond
		p, _ := start(t, cfg)
		if _, err := p.Write(make([]byte, 2<<20)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Write into a child that does not read = %v, want a deadline error", err)
		}
		ee := waitDone(t, p, 10*time.Second)
		want := ExitStatus{Code: -1, Signal: "killed", Reason: "it did not read its stdin for 300ms"}
		if diff := cmp.Diff(want, ee.Status); diff != "" || !errors.Is(ee, ErrStdinBlocked) {
			t.Errorf("status (-want +got):\n%s; cause %v, want ErrStdinBlocked", diff, ee.Cause)
		}
	})
}

// logRecord is one record of a recordingHandler.
type logRecord struct {
	Level slog.Level
	Msg   string
	Line  string // the "line" attribute
}

// recordingHandler keeps the records of the "line" attribute's messages.
type recordingHandler struct {
	mu   sync.Mutex
	recs *[]logRecord
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			rec.Line = a.Value.String()
		}
		return true
	})
	if rec.Line != "" {
		h.mu.Lock()
		*h.recs = append(*h.recs, rec)
		h.mu.Unlock()
	}
	return nil
}

// TestStderr: every line of stderr reaches the log as text (terminal
// escapes stripped, a long line cut) at the level StderrLevel gives it,
// and the *ExitError carries the last 20.
func TestStderr(t *testing.T) {
	var recs []logRecord
	h := &recordingHandler{recs: &recs}
	cfg := helperConfig(t, "stderr")
	cfg.Logger = slog.New(h)
	cfg.StderrLevel = func(line string) slog.Level {
		if strings.Contains(line, "ERROR") {
			return slog.LevelError
		}
		return slog.LevelInfo
	}
	p, _ := start(t, cfg)
	_ = p.Stop(context.Background())
	ee := waitDone(t, p, 10*time.Second)
	var want []logRecord
	for _, l := range stderrLines {
		l = StripANSI(l)
		level := slog.LevelInfo
		if strings.Contains(l, "ERROR") {
			level = slog.LevelError
		}
		want = append(want, logRecord{Level: level, Msg: "test child stderr", Line: l[:min(len(l), maxStderrLine)]})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("the log (-want +got):\n%s", diff)
	}
	var tail []string
	for _, r := range want[len(want)-stderrTailLines:] {
		tail = append(tail, r.Line)
	}
	if diff := cmp.Diff(strings.Join(tail, "\n"), ee.Stderr); diff != "" {
		t.Errorf("the tail (-want +got):\n%s", diff)
	}
	if !strings.Contains(ee.Stderr, "2026-11-25T08:00:00.1Z ERROR codex_core: it failed") {
		t.Errorf("the tail still has terminal escapes: %q", ee.Stderr)
	}
}

// shellLauncher runs a command the way a remote shell would (ssh runs
// `$SHELL -c <command line>` on the host): the directory is in the
// command line, the environment the caller added comes first on stdin
// (KEY=VALUE lines, then an empty line), the shell stays the process this
// machine started, and the command is its child. Nothing of this
// process's environment is passed: the shell starts with none.
func shellLauncher(s Spec) (Spec, error) {
	script := `while IFS= read -r kv && [ -n "$kv" ]; do export "$kv"; done; cd "$1" && shift && "$@"`
	args := []string{"-c", script, "sh", s.Dir}
	var pre strings.Builder
	for _, kv := range s.AddEnv {
		pre.WriteString(kv + "\n")
	}
	pre.WriteString("\n")
	return Spec{Path: "/bin/sh", Args: append(append(args, s.Path), s.Args...), Env: []string{}, Stdin: []byte(pre.String())}, nil
}

// TestLauncher: a child started through a Launcher runs where and as it
// says, and is supervised the same: its output, its exit status, and a
// stop that reaches the command behind the launcher.
func TestLauncher(t *testing.T) {
	dir := t.TempDir()
	cfg := helperConfig(t, "where")
	cfg.Spec.Env, cfg.Spec.Dir = append(cfg.Spec.Env, "CHILDPROC_WHERE=over there"), dir
	cfg.Spec.AddEnv = append(cfg.Spec.AddEnv, "CHILDPROC_WHERE=over there")
	cfg.Launch = shellLauncher
	p, out := start(t, cfg)
	ee := waitDone(t, p, 10*time.Second)
	if diff := cmp.Diff(dir+"\nover there\n", out()); diff != "" || ee.Status != (ExitStatus{}) {
		t.Errorf("output (-want +got):\n%s; status %v", diff, ee.Status)
	}

	cfg = helperConfig(t, "sleep")
	cfg.Spec.Dir = dir
	cfg.Launch = shellLauncher
	p, _ = start(t, cfg)
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if got := waitDone(t, p, 10*time.Second).Status; got.Signal == "" {
		t.Errorf("status %v, want killed by a signal", got)
	}
}

// TestOutput: a command run to its end gives its stdout, or its
// *ExitError; a context that ends kills it.
func TestOutput(t *testing.T) {
	dir := t.TempDir()
	cfg := helperConfig(t, "where")
	cfg.Spec.Dir = dir
	out, err := Output(t.Context(), cfg)
	if err != nil || string(out) != dir+"\n\n" {
		t.Errorf("Output = %q, %v", out, err)
	}
	out, err = Output(t.Context(), helperConfig(t, "exit", "7"))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Status != (ExitStatus{Code: 7}) || len(out) != 0 {
		t.Errorf("Output of exit 7 = %q, %v", out, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	if _, err := Output(ctx, helperConfig(t, "sleep")); !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 5*time.Second {
		t.Errorf("Output past its deadline = %v after %s", err, time.Since(begin))
	}
}

// TestStdinPreamble: what a launcher puts in Spec.Stdin reaches the child
// before anything the owner writes; a preamble the empty pipe cannot take
// at once is refused.
func TestStdinPreamble(t *testing.T) {
	cfg := helperConfig(t, "echo")
	cfg.Launch = func(s Spec) (Spec, error) { s.Stdin = []byte("first\n"); return s, nil }
	p, out := start(t, cfg)
	if _, err := p.Write([]byte("then\n")); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if diff := cmp.Diff("first\nthen\n", out()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}

	cfg.Launch = func(s Spec) (Spec, error) { s.Stdin = make([]byte, MaxStdinPreamble+1); return s, nil }
	if _, err := Start(cfg); err == nil || !strings.Contains(err.Error(), "stdin preamble") {
		t.Errorf("Start with a preamble of %d bytes: %v, want an error", MaxStdinPreamble+1, err)
	}
}
