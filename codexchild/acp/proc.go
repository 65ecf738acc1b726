package acp

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

const (
	// stderrTailLines is how many of the agent's last stderr lines an
	// *ExitError carries.
	stderrTailLines = 20
	// maxStderrLine cuts a stderr line before it is logged or kept.
	maxStderrLine = 4096
	// stdoutDrainGrace bounds the wait for stdout's EOF once the agent has
	// exited (a grandchild that inherited stdout may hold it open).
	stdoutDrainGrace = time.Second
)

// stdinWriteTimeout bounds one write to the agent's stdin: an agent that
// does not read it for that long is wedged and is killed, rather than
// blocking every caller behind the writer.
var stdinWriteTimeout = 30 * time.Second // a var for tests

// process is the agent process: its own process group (the agents are
// process trees: Gemini relaunches itself, claude-agent-acp runs Claude
// Code, every agent runs the MCP servers it is given), stdin and stdout
// as pipes, stderr drained to the log, the exit status once it has died.
//
// Design notes: Wait runs on its own goroutine from the start. done is
// closed only after Wait returned, stderr was drained and the reader
// finished stdout (or stdoutDrainGrace expired), and after the whole group
// was killed: nothing of the group outlives the leader, and an exit report
// never overtakes the agent's last messages.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	out    io.Reader
	log    *slog.Logger
	grace  time.Duration

	stdoutDone chan struct{} // closed by the reader when it stops reading stdout
	stdoutOnce sync.Once
	done       chan struct{} // closed when all of the above is over

	mu     sync.Mutex // guards tail, reason
	tail   []string
	reason string
	exit   ExitStatus // valid once done is closed
}

// startProcess starts cfg's agent in its own process group. The caller
// must read p.out until EOF and then call p.stdoutFinished.
func startProcess(cfg *Config, log *slog.Logger) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("acp: start %s: %w", cfg.Command, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("acp: start %s: %w", cfg.Command, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("acp: start %s: %w", cfg.Command, err)
	}
	bin, args := cfg.Command, cfg.Args
	if len(cfg.Guard) > 0 {
		bin, args = cfg.Guard[0], append(append(append([]string(nil), cfg.Guard[1:]...), cfg.Command), cfg.Args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = cfg.env()
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if len(cfg.Guard) > 0 {
		childproc.SetParentDeathSignal(cmd.SysProcAttr)
		err = childproc.StartFromLastingThread(cmd)
	} else {
		err = cmd.Start()
	}
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("acp: start %s: %w", cfg.Command, err)
	}
	p := &process{
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		out:        jsonrpcframe.PipeReader(outR),
		log:        log.With("pid", cmd.Process.Pid),
		grace:      cfg.stopGrace(),
		stdoutDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		p.drainStderr(errR)
	}()
	go p.supervise(stderrDone)
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// supervise waits for the agent, then for its output, kills what is left
// of its group and closes done.
func (p *process) supervise(stderrDone <-chan struct{}) {
	err := p.cmd.Wait()
	p.exit = exitStatus(p.cmd.ProcessState, err)
	p.log.Info("acp agent exited", "status", p.exit.String())
	// Nothing of the group may outlive the leader (Gemini's relaunched
	// child, the MCP servers it started).
	_ = p.signalGroup(syscall.SIGKILL)
	select {
	case <-p.stdoutDone:
	case <-time.After(stdoutDrainGrace):
		p.stdout.Close() // something outside the group holds it open
		<-p.stdoutDone
	}
	select {
	case <-stderrDone:
	case <-time.After(stdoutDrainGrace):
	}
	p.stdin.Close()
	close(p.done)
}

// write writes one framed message to stdin; a write blocked for
// stdinWriteTimeout kills the group.
func (p *process) Write(b []byte) (int, error) {
	_ = p.stdin.SetWriteDeadline(time.Now().Add(stdinWriteTimeout))
	n, err := p.stdin.Write(b)
	_ = p.stdin.SetWriteDeadline(time.Time{})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.kill(fmt.Sprintf("it did not read its stdin for %v", stdinWriteTimeout))
	}
	return n, err
}

// stdoutFinished tells the supervisor that the reader has stopped.
func (p *process) stdoutFinished() {
	p.stdoutOnce.Do(func() {
		p.stdout.Close()
		close(p.stdoutDone)
	})
}

// kill kills the group of an agent the client found broken or hung;
// reason goes into every *ExitError.
func (p *process) kill(reason string) {
	p.mu.Lock()
	if p.reason == "" {
		p.reason = reason
	}
	p.mu.Unlock()
	p.log.Error("killing the acp agent's process group", "reason", reason)
	_ = p.signalGroup(syscall.SIGKILL)
}

// stop ends the agent gracefully: close stdin, SIGTERM to the group after
// the grace, SIGKILL after a second grace; at once when ctx ends.
func (p *process) stop(ctx context.Context) error {
	p.stdin.Close()
	wait := func() bool {
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
	if wait() {
		return nil
	}
	if ctx.Err() == nil {
		p.log.Info("acp agent did not exit after stdin closed; SIGTERM to its group", "grace", p.grace)
		_ = p.signalGroup(syscall.SIGTERM)
		if wait() {
			return nil
		}
	}
	p.log.Warn("acp agent still running; SIGKILL to its group")
	_ = p.signalGroup(syscall.SIGKILL)
	<-p.done
	return ctx.Err()
}

func (p *process) signalGroup(sig syscall.Signal) error {
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// exitError is the *ExitError of the dead agent; valid once done is
// closed.
func (p *process) exitError() *ExitError {
	p.mu.Lock()
	defer p.mu.Unlock()
	return &ExitError{Status: p.exit, Stderr: joinLines(p.tail), Reason: p.reason}
}

// drainStderr logs every stderr line and keeps the last few; it reads to
// EOF, so the agent never blocks on a full stderr pipe.
func (p *process) drainStderr(r *os.File) {
	defer r.Close()
	br := bufio.NewReaderSize(jsonrpcframe.PipeReader(r), 16<<10)
	var long []byte
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
			line = append(long, frag[:min(len(frag), max(0, maxStderrLine-len(long)))]...)
			long = nil
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > maxStderrLine {
			line = line[:maxStderrLine]
		}
		if len(line) > 0 {
			s := string(line)
			p.log.Info("acp agent stderr", "line", s)
			p.mu.Lock()
			if len(p.tail) == stderrTailLines {
				p.tail = append(p.tail[:0], p.tail[1:]...)
			}
			p.tail = append(p.tail, s)
			p.mu.Unlock()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.Warn("acp agent stderr read failed", "err", err)
			}
			return
		}
	}
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String()
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
