package sshhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
)

// execGrace is how long a stopped Exec's ssh has between SIGTERM and
// SIGKILL (exec.Cmd's WaitDelay).
const execGrace = 2 * time.Second

// Exec runs c on the host to its end, over the master connection, with
// stdin fed from stdin (nil: empty), its stdout and stderr copied to
// stdout and stderr as they come (nil discards): git and sh for the
// worktrees of a host, whose input and output are streams (git
// update-index --stdin, a merge check's progress). c.Env crosses in the
// wrapper's stdin preamble, as an agent's does (Command), and c.Dir is a
// directory there ("" is the home there); c.Stdin must be empty.
//
// With Config.Instance the wrapper keeps a pid file on the host while c
// runs, as an agent's (a session exec-<n> of the instance), so that a
// command cut off is stopped there: when ctx ends first, the local ssh is
// stopped and what still runs there of c is reaped (SIGTERM, SIGKILL
// after Config.ReapGrace), and ctx's error is returned; Close reaps what
// is left as it does agents.
//
// An exit other than 0 is an *Error that carries the end of stderr: the
// command's own exit status (ExitCode tells it), or, wrapping ErrNoDir,
// ErrSSH and, when the connection is lost, ErrDown, what went wrong
// before or around it. It fails at once, with ErrDown, while the
// connection is down.
func (h *Host) Exec(ctx context.Context, c Command, stdin io.Reader, stdout, stderr io.Writer) error {
	op := "run " + opName(append([]string{c.Path}, c.Args...))
	if c.Path == "" || strings.Contains(c.Path, "=") {
		return h.err(op, "", fmt.Errorf("program %q: want a name or a path, without '='", c.Path))
	}
	if len(c.Stdin) > 0 {
		return h.err(op, "", errors.New("a command with a stdin preamble of its own cannot be wrapped"))
	}
	pre, err := envPreamble(c.Env)
	if err != nil {
		return h.err(op, "", err)
	}
	for _, w := range append([]string{c.Path, c.Dir}, c.Args...) {
		if strings.Contains(w, "\x00") {
			return h.err(op, "", errors.New("an argument holds a NUL byte"))
		}
	}
	if err := h.ready(op); err != nil {
		return err
	}
	var session, zero string
	if h.cfg.Instance != "" {
		session = "exec-" + strconv.FormatInt(h.execs.Add(1), 10)
		zero = tagPrefix + h.cfg.Instance + "/" + session
	} else {
		zero = "atm-agent-mcp-exec"
	}
	line := remote(execScript, zero, append([]string{h.cfg.Instance, session, c.Dir, c.Path}, c.Args...)...)

	in := io.Reader(bytes.NewReader(pre))
	if stdin != nil {
		in = io.MultiReader(in, stdin)
	}
	tail := &stderrTail{max: 4096}
	errW := io.Writer(tail)
	if stderr != nil {
		errW = io.MultiWriter(stderr, tail)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	cmd := exec.CommandContext(ctx, h.cfg.ssh(), append(h.muxArgs(), "--", h.cfg.Dest, line)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, stdout, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = execGrace
	err = cmd.Run()
	if ctx.Err() != nil {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		if session != "" {
			h.reapCut(session)
		}
		return h.err(op, tail.String(), fmt.Errorf("%w: %w", errStopped, context.Cause(ctx)))
	}
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return h.err(op, tail.String(), fmt.Errorf("%w: %w", ErrSSH, err))
	}
	return h.err(op, tail.String(), h.execCause(ee.ExitCode(), tail.String()))
}

// errStopped is the cause of a command Exec stopped: its context ended.
var errStopped = errors.New("stopped: its context ended")

// execCause is the error of a command that exited with code, having said
// said on stderr: the wrapper's or ssh's failure, or the command's own
// exit status.
func (h *Host) execCause(code int, said string) error {
	switch {
	case code == exitNoDir && strings.Contains(said, wrapperMarker+"no directory"):
		return ErrNoDir
	case code == exitWrapper && strings.Contains(said, wrapperMarker):
		return fmt.Errorf("%w: the wrapper could not set up on the host", ErrSSH)
	case code == exitSSH && strings.Contains(said, downMarker):
		return fmt.Errorf("%w: %w", ErrSSH, ErrDown)
	case code == exitSSH && (sshSaid(said) || h.Err() != nil):
		if h.Err() != nil {
			return fmt.Errorf("%w: %w", ErrSSH, ErrDown)
		}
		return ErrSSH
	case code < 0:
		return fmt.Errorf("%w: ssh was killed", ErrSSH)
	}
	return &exitStatus{code: code}
}

// wrapperMarker starts what the wrappers on the host say of themselves.
const wrapperMarker = "atm-agent-mcp: "

// sshWords are in what ssh (a client over the master connection) says
// when it, not the command, fails.
var sshWords = []string{"mux_client", "Control socket", "ControlSocket", "closed by remote host", "Connection closed",
	"Session open refused", "open failed", "Broken pipe", "ssh: ", "kex_exchange", "Connection reset"}

// sshSaid reports whether stderr has ssh's words for its own failure.
func sshSaid(stderr string) bool {
	for _, w := range sshWords {
		if strings.Contains(stderr, w) {
			return true
		}
	}
	return false
}

// exitStatus is the exit status of a command that ran on the host.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return "exited with code " + strconv.Itoa(e.code) }

// ExitCode returns the exit status of a command that ran on the host and
// exited with it (Run, Exec); ok is false when the error is anything else
// (ssh's failure, the connection's, a missing directory, a stop).
func ExitCode(err error) (code int, ok bool) {
	if err == nil || errors.Is(err, ErrSSH) || errors.Is(err, ErrNoDir) || errors.Is(err, ErrDown) || errors.Is(err, errStopped) {
		return 0, false
	}
	var es *exitStatus
	if errors.As(err, &es) {
		return es.code, true
	}
	var ce *childproc.ExitError
	if errors.As(err, &ce) && ce.Status.Signal == "" && ce.Status.Code > 0 {
		return ce.Status.Code, true
	}
	return 0, false
}

// reapCut stops what runs on the host of an Exec session whose ssh was
// stopped: its wrapper's process group, from its pid file.
func (h *Host) reapCut(session string) {
	ctx, cancel := context.WithTimeout(h.closeCtx, h.cfg.connectTimeout()+h.cfg.reapGrace())
	defer cancel()
	tenths := fmt.Sprint(max(int(h.cfg.reapGrace().Milliseconds()/100), 1))
	if _, err := h.run(ctx, "reap "+session, remote(reapScript, "atm-agent-mcp-reap", h.cfg.Instance, tenths, session)); err != nil {
		h.log.Warn("could not stop a command cut off on the host", "session", session, "err", err)
	}
}

// stderrTail keeps the last max bytes written to it.
type stderrTail struct {
	max int
	mu  sync.Mutex
	buf []byte
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(b)
}
