package codexchild

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// stderrTailLines is how many of the child's last stderr lines an
// *ExitError carries.
const stderrTailLines = 20

// maxStderrLine cuts a stderr line (one without a newline for megabytes)
// before it is logged or kept.
const maxStderrLine = 4096

// stdoutDrainGrace bounds how long the supervisor waits for stdout to reach
// EOF once the child has exited (a grandchild that inherited stdout may hold
// it open).
const stdoutDrainGrace = time.Second

// stdinWriteTimeout bounds one write to the child's stdin. Codex reads its
// stdin all the time (into a queue), so a write that cannot finish for this
// long means a wedged child; it is killed rather than left to block every
// caller behind the writer's lock.
var stdinWriteTimeout = 30 * time.Second // a var for tests

// childConfig says how to start a child process.
type childConfig struct {
	Bin  string
	Args []string
	Env  []string // the full environment; nil means os.Environ()
	Dir  string
	// Guard (optional) is the guard command the child is started through
	// (Config.Guard).
	Guard []string
	// Grace is the wait after closing stdin before SIGTERM, and again
	// before SIGKILL.
	Grace  time.Duration
	Logger *slog.Logger
}

// child is one supervised process: its own process group, stdin and stdout
// as pipes owned by the caller, stderr drained to the logger, and an exit
// status once it has died.
//
// Design notes: Wait runs in its own goroutine from the start, so the exit
// is seen even if nobody reads stdout; stdout is an os.Pipe that Wait never
// closes, so the reader always gets every byte the child wrote before it
// died. done is closed only after Wait has returned, stderr has been drained
// and the owner has finished reading stdout (or stdoutDrainGrace expired, in
// which case the group is killed and stdout closed), so an exit report never
// overtakes the child's last messages.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File // read end; the owner reads it until EOF
	// in writes stdin and out reads stdout with raw system calls where
	// the pipes allow it (jsonrpcframe.Pipe; in is nil where they do not);
	// out is the owner's reader of stdout.
	in *jsonrpcframe.Pipe
	// blocked, when set, is called before a Write waits for room in
	// stdin; the owner sets it around one write at a time.
	blocked func()
	out     io.Reader
	log     *slog.Logger
	grace   time.Duration
	cancel  context.CancelFunc // makes exec send SIGTERM to the group

	stdoutDone chan struct{} // closed by the owner when it stops reading stdout
	stdoutOnce sync.Once
	waited     chan struct{} // closed when Wait has returned
	done       chan struct{} // closed when everything above is over

	tailMu sync.Mutex
	tail   []string // last stderr lines

	exit ExitStatus // valid once waited is closed

	reasonMu sync.Mutex
	reason   string // why the proxy killed the child, if it did
}

// kill stops a child the proxy found broken: SIGKILL to its group; reason
// goes into the exit error every pending and later call gets.
func (c *child) kill(reason string) {
	c.reasonMu.Lock()
	if c.reason == "" {
		c.reason = reason
	}
	c.reasonMu.Unlock()
	c.log.Error("codex child is broken; killing it", "reason", reason)
	_ = signalGroup(c.cmd, syscall.SIGKILL)
}

// startChild starts the process. The caller must read c.stdout until EOF
// (or an error) and then call c.stdoutFinished.
func startChild(cfg childConfig) (*child, error) {
	log := cfg.Logger
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("codexchild: start %s: %w", cfg.Bin, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("codexchild: start %s: %w", cfg.Bin, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("codexchild: start %s: %w", cfg.Bin, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	bin, args := cfg.Bin, cfg.Args
	if len(cfg.Guard) > 0 {
		bin, args = cfg.Guard[0], append(append(append([]string(nil), cfg.Guard[1:]...), cfg.Bin), cfg.Args...)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cfg.Env
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	guarded := len(cfg.Guard) > 0
	if guarded {
		childproc.SetParentDeathSignal(cmd.SysProcAttr)
	}
	// As in gopls: cancelling the context sends SIGTERM to the whole group;
	// WaitDelay later is the hard stop (exec kills the leader; stop kills
	// the group).
	cmd.Cancel = func() error { return signalGroup(cmd, syscall.SIGTERM) }
	cmd.WaitDelay = cfg.Grace
	if guarded {
		err = childproc.StartFromLastingThread(cmd)
	} else {
		err = cmd.Start()
	}
	// The child has its own copies now (or never will).
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		cancel()
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("codexchild: start %s: %w", cfg.Bin, err)
	}
	c := &child{
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		in:         jsonrpcframe.NewPipe(inW),
		out:        jsonrpcframe.PipeReader(outR),
		log:        log.With("pid", cmd.Process.Pid),
		grace:      cfg.Grace,
		cancel:     cancel,
		stdoutDone: make(chan struct{}),
		waited:     make(chan struct{}),
		done:       make(chan struct{}),
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		c.drainStderr(errR)
	}()
	go c.supervise(stderrDone)
	return c, nil
}

// supervise waits for the process, then for its output to be drained, and
// closes done.
func (c *child) supervise(stderrDone <-chan struct{}) {
	err := c.cmd.Wait()
	c.exit = exitStatus(c.cmd.ProcessState, err)
	close(c.waited)
	c.log.Info("codex child exited", "status", c.exit.String())
	select {
	case <-c.stdoutDone:
	case <-time.After(stdoutDrainGrace):
		// Something that inherited stdout keeps it open: end it.
		_ = signalGroup(c.cmd, syscall.SIGKILL)
		c.stdout.Close()
		<-c.stdoutDone
	}
	select {
	case <-stderrDone:
	case <-time.After(stdoutDrainGrace):
		_ = signalGroup(c.cmd, syscall.SIGKILL)
		<-stderrDone
	}
	// Nothing of the group may outlive the leader (a shell Codex ran, say).
	_ = signalGroup(c.cmd, syscall.SIGKILL)
	c.stdin.Close()
	c.cancel()
	close(c.done)
}

// Write writes p to the child's stdin. A write still blocked after
// stdinWriteTimeout kills the child's process group: a message may have been
// cut, so the stream is lost anyway. What the pipe takes at once is written
// without a deadline (the common case: Codex reads its stdin all the time).
func (c *child) Write(p []byte) (int, error) {
	var n int
	if c.in != nil {
		m, blocked, err := c.in.TryWrite(p)
		if err != nil || !blocked {
			return m, err
		}
		n = m
	}
	if c.blocked != nil {
		c.blocked()
	}
	_ = c.stdin.SetWriteDeadline(time.Now().Add(stdinWriteTimeout))
	m, err := c.stdin.Write(p[n:])
	n += m
	_ = c.stdin.SetWriteDeadline(time.Time{})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.log.Error("codex child has not read its stdin for too long; killing it", "timeout", stdinWriteTimeout)
		_ = signalGroup(c.cmd, syscall.SIGKILL)
	}
	return n, err
}

// stdoutFinished tells the supervisor that the owner has stopped reading
// stdout; it closes the read end.
func (c *child) stdoutFinished() {
	c.stdoutOnce.Do(func() {
		c.stdout.Close()
		close(c.stdoutDone)
	})
}

// drainStderr logs every stderr line and keeps the last few. It never stops
// reading before EOF, so the child cannot block on a full stderr pipe.
func (c *child) drainStderr(r *os.File) {
	defer r.Close()
	br := bufio.NewReaderSize(jsonrpcframe.PipeReader(r), 16<<10)
	var long []byte // a line longer than the buffer, cut to maxStderrLine
	for {
		frag, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long) < maxStderrLine {
				long = append(long, frag[:min(len(frag), maxStderrLine-len(long))]...)
			}
			continue
		}
		line := frag
		if long != nil {
			if len(long) < maxStderrLine {
				long = append(long, frag[:min(len(frag), maxStderrLine-len(long))]...)
			}
			line, long = long, nil
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > maxStderrLine {
			line = line[:maxStderrLine]
		}
		if len(line) > 0 {
			s := stripANSI(string(line))
			c.log.Log(context.Background(), stderrLevel(s), "codex stderr", "line", s)
			c.tailMu.Lock()
			if len(c.tail) == stderrTailLines {
				copy(c.tail, c.tail[1:])
				c.tail = c.tail[:stderrTailLines-1]
			}
			c.tail = append(c.tail, s)
			c.tailMu.Unlock()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.log.Warn("codex stderr read failed", "err", err)
			}
			return
		}
	}
}

// stderrTail returns the last stderr lines, joined by newlines.
func (c *child) stderrTail() string {
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	var b bytes.Buffer
	for i, l := range c.tail {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String()
}

// exitError returns the *ExitError for the dead child; only valid once done
// is closed.
func (c *child) exitError() *ExitError {
	c.reasonMu.Lock()
	defer c.reasonMu.Unlock()
	return &ExitError{Status: c.exit, Stderr: c.stderrTail(), Reason: c.reason}
}

// stop ends the child gracefully: close stdin, SIGTERM to the group after
// the grace, SIGKILL to the group after a second grace. It returns when the
// child is done, or when ctx ends (after a SIGKILL).
func (c *child) stop(ctx context.Context) error {
	c.stdin.Close()
	step := func() bool {
		t := time.NewTimer(c.grace)
		defer t.Stop()
		select {
		case <-c.done:
			return true
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	if step() {
		return nil
	}
	if ctx.Err() == nil {
		c.log.Info("codex child did not exit after stdin closed; sending SIGTERM", "grace", c.grace)
		c.cancel() // cmd.Cancel: SIGTERM to the group
		if step() {
			return nil
		}
	}
	c.log.Warn("codex child still running; sending SIGKILL")
	_ = signalGroup(c.cmd, syscall.SIGKILL)
	<-c.done
	return ctx.Err()
}

// signalGroup sends sig to the child's process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// exitStatus turns what Wait reported into an ExitStatus.
func exitStatus(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1, Signal: fmt.Sprint(err)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal().String()}
	}
	return ExitStatus{Code: ps.ExitCode()}
}
