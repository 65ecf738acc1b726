package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// drainGrace bounds how long the supervisor waits for stdout (and then
// stderr) to reach EOF once the child has exited and its group was
// killed: something outside the group that inherited a pipe may hold it
// open.
const drainGrace = time.Second

// Process is one supervised child: its own process group, stdin and
// stdout as pipes (the owner writes the one and reads the other), stderr
// drained to the log, and how it died once it has.
//
// Design notes: Wait runs on a goroutine of its own from the start, so
// the exit is seen even if nobody reads stdout; stdout is an os.Pipe that
// Wait never closes, so the owner gets every byte the child wrote before
// it died. Once the leader has exited the whole group is killed (nothing
// of it may outlive the leader: a shell Codex ran, Gemini's relaunched
// child, the MCP servers an agent started). Done is closed only after
// that, after stderr was drained and after the owner has finished reading
// stdout (StdoutDone), or drainGrace expired and the pipe was closed: an
// exit report never overtakes the child's last messages.
//
// Locks: mu guards the stderr tail, the kill's cause and whether Wait has
// returned; it is never held across I/O or a signal. Writes to stdin are
// the owner's to serialise (one writer at a time).
type Process struct {
	name         string
	stderrMsg    string // the log message of a stderr line: name + " stderr"
	log          *slog.Logger
	grace        time.Duration
	writeTimeout time.Duration
	level        func(string) slog.Level

	cmd    *exec.Cmd
	cancel context.CancelFunc // makes exec send SIGTERM to the group (cmd.Cancel)

	stdin *os.File
	// in writes stdin with raw system calls where the pipe allows it
	// (jsonrpcframe.Pipe); nil where it does not.
	in *jsonrpcframe.Pipe
	// blocked, when set, is called before a write waits for room in
	// stdin; the owner sets it around one write at a time (SetBlocked).
	blocked func()

	stdout     *os.File  // read end; the owner reads it until EOF
	out        io.Reader // the owner's reader of stdout
	stdoutDone chan struct{}
	stdoutOnce sync.Once
	done       chan struct{} // closed when everything above is over

	mu     sync.Mutex
	tail   []string   // the last stderr lines
	cause  error      // why the supervisor killed it; the first cause wins
	waited bool       // Wait has returned: a later Kill is no cause of death
	exit   ExitStatus // valid once done is closed
}

// Start starts cfg's command in a process group of its own. The caller
// must read Stdout until EOF (or an error), then call StdoutDone.
func Start(cfg Config) (*Process, error) {
	name, log := cfg.name(), cfg.logger()
	spec, err := cfg.command()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Spec.Path, err)
	}
	if len(spec.Stdin) > MaxStdinPreamble {
		return nil, fmt.Errorf("start %s: a stdin preamble of %d bytes, more than %d", cfg.Spec.Path, len(spec.Stdin), MaxStdinPreamble)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Spec.Path, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("start %s: %w", cfg.Spec.Path, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("start %s: %w", cfg.Spec.Path, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, spec.Path, spec.Args...)
	cmd.Env, cmd.Dir = spec.Env, spec.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// As gopls does: cancelling the context sends SIGTERM to the whole
	// group; WaitDelay later is the hard stop (exec kills the leader,
	// supervise the group).
	cmd.Cancel = func() error { return signalGroup(cmd, syscall.SIGTERM) }
	cmd.WaitDelay = cfg.grace()
	if len(cfg.Guard) > 0 {
		SetParentDeathSignal(cmd.SysProcAttr)
		err = StartFromLastingThread(cmd)
	} else {
		err = cmd.Start()
	}
	closeAll(inR, outW, errW) // the child has its own copies now (or never will)
	if err != nil {
		cancel()
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("start %s: %w", cfg.Spec.Path, err)
	}
	p := &Process{
		name:         name,
		stderrMsg:    name + " stderr",
		log:          log.With("pid", cmd.Process.Pid),
		grace:        cfg.grace(),
		writeTimeout: cfg.writeTimeout(),
		level:        cfg.StderrLevel,
		cmd:          cmd,
		cancel:       cancel,
		stdin:        inW,
		in:           jsonrpcframe.NewPipe(inW),
		stdout:       outR,
		out:          jsonrpcframe.PipeReader(outR),
		stdoutDone:   make(chan struct{}),
		done:         make(chan struct{}),
	}
	p.log.Info(name+" started", "bin", cfg.Spec.Path, "args", cfg.Spec.Args)
	if len(spec.Stdin) > 0 {
		// The pipe is empty and takes MaxStdinPreamble bytes at once.
		if _, err := p.Write(spec.Stdin); err != nil {
			p.Kill(Because("its stdin preamble could not be written", err))
		}
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		p.drainStderr(errR)
	}()
	go p.supervise(errR, stderrDone)
	return p, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// PID is the process id of the child (of the guard, when it has one).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stdout is the owner's reader of the child's stdout.
func (p *Process) Stdout() io.Reader { return p.out }

// StdoutDone tells the supervisor that the owner has stopped reading
// stdout; it closes the read end.
func (p *Process) StdoutDone() {
	p.stdoutOnce.Do(func() {
		p.stdout.Close()
		close(p.stdoutDone)
	})
}

// Done is closed once the child has exited, its group was killed and its
// output was read; Err is valid from then on.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns how the child died; valid once Done is closed.
func (p *Process) Err() *ExitError {
	p.mu.Lock()
	defer p.mu.Unlock()
	return &ExitError{Child: p.name, Status: p.exit, Stderr: joinLines(p.tail), Cause: p.cause}
}

// supervise waits for the child, kills what is left of its group, waits
// for its output to be read, and closes done.
func (p *Process) supervise(stderr *os.File, stderrDone <-chan struct{}) {
	err := p.cmd.Wait()
	exit := exitStatus(p.cmd.ProcessState, err)
	p.mu.Lock()
	p.waited = true
	p.mu.Unlock()
	// Nothing of the group may outlive the leader.
	_ = signalGroup(p.cmd, syscall.SIGKILL)
	select {
	case <-p.stdoutDone:
	case <-time.After(drainGrace):
		p.stdout.Close() // something outside the group holds it open
		<-p.stdoutDone
	}
	// The reason is read once stdout is done: a cause may count what the
	// owner read after the kill (Garbage.Err).
	p.mu.Lock()
	if p.cause != nil {
		exit.Reason = p.cause.Error()
	}
	p.exit = exit
	p.mu.Unlock()
	p.log.Info(p.name+" exited", "status", exit.String())
	select {
	case <-stderrDone:
	case <-time.After(drainGrace):
		stderr.Close()
		<-stderrDone
	}
	p.stdin.Close()
	p.cancel()
	close(p.done)
}

// SetBlocked sets the function Write calls before it waits for room in
// stdin (nil: none). The one writer sets it around a write.
func (p *Process) SetBlocked(fn func()) { p.blocked = fn }

// Write writes b to the child's stdin. What the pipe takes at once is
// written without a deadline (the common case: the child reads its stdin
// all the time); the rest waits at most Config.WriteTimeout, after which
// the child is killed (ErrStdinBlocked): a message may have been cut, so
// the stream is lost anyway. Writes must not overlap.
func (p *Process) Write(b []byte) (int, error) {
	var n int
	if p.in != nil {
		m, blocked, err := p.in.TryWrite(b)
		if err != nil || !blocked {
			return m, err
		}
		n = m
	}
	if p.blocked != nil {
		p.blocked()
	}
	_ = p.stdin.SetWriteDeadline(time.Now().Add(p.writeTimeout))
	m, err := p.stdin.Write(b[n:])
	n += m
	_ = p.stdin.SetWriteDeadline(time.Time{})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.Kill(Because(fmt.Sprintf("it did not read its stdin for %v", p.writeTimeout), ErrStdinBlocked))
	}
	return n, err
}

// Kill kills the group of a child the owner found broken: SIGKILL. cause
// (see Because) says why: the first cause given before the child died is
// its ExitError's Cause and its ExitStatus's Reason; a later one is only
// logged.
func (p *Process) Kill(cause error) {
	p.mu.Lock()
	if p.cause == nil && !p.waited {
		p.cause = cause
	}
	p.mu.Unlock()
	p.log.Error(p.name+" is broken; killing its process group", "reason", cause)
	_ = signalGroup(p.cmd, syscall.SIGKILL)
}

// Stop ends the child gracefully: close its stdin, SIGTERM to its group
// after Config.Grace, SIGKILL to its group after a second grace. It
// returns once Done is closed; when ctx ends first the group is killed at
// once and ctx's error returned.
func (p *Process) Stop(ctx context.Context) error {
	p.stdin.Close()
	step := func() bool {
		t := time.NewTimer(p.grace)
		defer t.Stop()
		select {
		case <-p.done:
			return true
		case <-t.C:
		case <-ctx.Done():
		}
		return false
	}
	if step() {
		return nil
	}
	if ctx.Err() == nil {
		p.log.Info(p.name+" did not exit after its stdin was closed; SIGTERM to its process group", "grace", p.grace)
		p.cancel() // cmd.Cancel
		if step() {
			return nil
		}
	}
	p.log.Warn(p.name + " is still running; SIGKILL to its process group")
	_ = signalGroup(p.cmd, syscall.SIGKILL)
	<-p.done
	return ctx.Err()
}

// signalGroup sends sig to cmd's process group.
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
