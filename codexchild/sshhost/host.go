package sshhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
)

// maxSocketPath bounds the control socket's path: sun_path holds 104 bytes
// on macOS, and ssh binds a name 17 bytes longer before it renames it.
const maxSocketPath = 104 - 18

// stopGrace is the childproc grace of the master connection's ssh at Close.
const stopGrace = 500 * time.Millisecond

// Host is one host reached over OpenSSH's ssh: one master connection,
// supervised (made again with backoff when it drops), that every command
// for the host shares (Command, Run, Forward, Reap).
//
// Design notes: the supervisor goroutine owns the master process; it
// makes the connection, re-makes the forwards and reaps, then reports the
// host up, and when the process ends reports it down with what ssh said
// and tries again. Commands over the master (`ssh -S <socket>`) are
// separate processes that need no lock; a command started while the
// master is down fails at once (its ssh refuses to connect by itself).
//
// Locks: mu guards the state (up, closed, the last error, the change
// channel) and the forwards; it is a leaf, held across no I/O.
type Host struct {
	cfg    Config
	log    *slog.Logger
	ctl    string // the control socket
	ownDir string // the RunDir New made and Close removes; "" when it is the caller's

	closeCtx  context.Context // cancelled by Close
	closeNow  context.CancelFunc
	closing   <-chan struct{} // closeCtx.Done()
	done      chan struct{}   // closed when the supervisor has ended
	closeOnce sync.Once
	launches  atomic.Int64 // the sessions Launcher has named
	execs     atomic.Int64 // the sessions Exec has named

	mu       sync.Mutex
	up       bool
	closed   bool
	changed  chan struct{} // closed, and replaced, at each change of up or closed
	lastErr  *Error        // why the last attempt failed or the last connection ended
	failures int           // attempts failed and connections ended so far
	forwards map[*Forward]struct{}
}

// New checks cfg and starts connecting to the host in the background; Up
// waits for the connection. Close ends it.
func New(cfg Config) (*Host, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	h := &Host{
		cfg:      cfg,
		log:      cfg.logger().With("host", cfg.Name),
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		forwards: make(map[*Forward]struct{}),
	}
	h.closeCtx, h.closeNow = context.WithCancel(context.Background())
	h.closing = h.closeCtx.Done()
	dir := cfg.RunDir
	if dir == "" {
		var err error
		if dir, err = ownRunDir(cfg.Name); err != nil {
			return nil, fmt.Errorf("sshhost: host %q: %w", cfg.Name, err)
		}
		h.ownDir = dir
	}
	h.ctl = filepath.Join(dir, cfg.Name+".ctl")
	if len(h.ctl) > maxSocketPath {
		h.closeNow()
		h.removeOwnDir()
		return nil, fmt.Errorf("sshhost: host %q: control socket path %s is longer than %d bytes: give a shorter RunDir", cfg.Name, h.ctl, maxSocketPath)
	}
	go h.supervise()
	return h, nil
}

// Name returns the host's name (Config.Name).
func (h *Host) Name() string { return h.cfg.Name }

// Up waits until the master connection is up. When ctx ends first it
// returns an *Error wrapping ErrDown, ctx's error and, with what ssh said,
// why the last attempt failed; after Close, ErrClosed.
func (h *Host) Up(ctx context.Context) error {
	for {
		h.mu.Lock()
		up, closed, changed, last := h.up, h.closed, h.changed, h.lastErr
		h.mu.Unlock()
		switch {
		case closed:
			return h.err("connect", "", ErrClosed)
		case up:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if last == nil {
				return h.err("connect", "", fmt.Errorf("%w: %w", ErrDown, context.Cause(ctx)))
			}
			return h.err("connect", last.Stderr, fmt.Errorf("%w (gave up waiting: %w)", down(last.Err), context.Cause(ctx)))
		}
	}
}

// Attempt waits until the master connection is up, or until an attempt
// to make it that ends after the call has failed: then it returns that
// attempt's *Error (wrapping ErrDown, with what ssh said). It is Up for a
// caller that wants one answer, not to wait out a reconnect (a check).
// After Close, ErrClosed; when ctx ends first, as Up.
func (h *Host) Attempt(ctx context.Context) error {
	h.mu.Lock()
	seen := h.failures
	h.mu.Unlock()
	for {
		h.mu.Lock()
		up, closed, changed, last, failures := h.up, h.closed, h.changed, h.lastErr, h.failures
		h.mu.Unlock()
		switch {
		case closed:
			return h.err("connect", "", ErrClosed)
		case up:
			return nil
		case failures > seen:
			return h.err(last.Op, last.Stderr, down(last.Err))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return h.Up(ctx)
		}
	}
}

// ready returns nil when the connection is up, else the *Error for op.
func (h *Host) ready(op string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return h.err(op, "", ErrClosed)
	case h.up:
		return nil
	case h.lastErr != nil:
		return h.err(op, h.lastErr.Stderr, down(h.lastErr.Err))
	}
	return h.err(op, "", fmt.Errorf("%w: not connected yet", ErrDown))
}

// down is why the connection is down, err, wrapping ErrDown once.
func down(err error) error {
	if errors.Is(err, ErrDown) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrDown, err)
}

// Close stops the supervisor: it stops this instance's agents on the host
// (Config.Instance, when the connection is up), ends the master connection
// (and so every command over it) and removes the RunDir New made. It
// returns once all that is done, or ctx's error when ctx ends first.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.closed = true
		h.signalLocked()
		h.mu.Unlock()
		h.closeNow()
	})
	select {
	case <-h.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	h.removeOwnDir()
	return nil
}

// ownRunDir makes a private directory for the control socket of host
// name: under the system's temporary directory, or under /tmp when the
// socket's path would be too long there (a long $TMPDIR).
func ownRunDir(name string) (string, error) {
	base := os.TempDir()
	if len(filepath.Join(base, "atm-ssh-0123456789", name+".ctl")) > maxSocketPath {
		base = "/tmp"
	}
	return os.MkdirTemp(base, "atm-ssh-")
}

func (h *Host) removeOwnDir() {
	if h.ownDir != "" {
		_ = os.RemoveAll(h.ownDir)
	}
}

func (h *Host) err(op, stderr string, err error) *Error {
	return &Error{Host: h.cfg.Name, Op: op, Stderr: stderr, Err: err}
}

// signalLocked wakes every Up waiting for a change.
func (h *Host) signalLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *Host) setState(up bool, why *Error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.up = up
	if why != nil {
		h.lastErr = why
		h.failures++
	}
	h.signalLocked()
}

// supervise makes the master connection, and makes it again with backoff
// each time it ends, until Close.
func (h *Host) supervise() {
	defer close(h.done)
	backoff := h.cfg.minBackoff()
	for {
		p, err := h.connect()
		if err == nil {
			if err = h.established(); err != nil {
				h.stopMaster(p)
			}
		}
		if err == nil {
			h.log.Info("ssh connection to host is up")
			h.setState(true, nil)
			backoff = h.cfg.minBackoff()
			select {
			case <-p.Done():
				err = h.exitErr("connection lost", fmt.Errorf("%w: the master connection ended", ErrDown), p.Err())
			case <-h.closing:
				h.shutdown(p)
				return
			}
		}
		if errors.Is(err, ErrClosed) {
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			e = h.err("connect", "", err)
		}
		h.setState(false, e)
		h.log.Warn("ssh connection to host failed; trying again", "err", e, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-h.closing:
			t.Stop()
			return
		}
		backoff = min(2*backoff, h.cfg.maxBackoff())
	}
}

// connect starts the master connection's ssh and waits until its control
// socket is there (ssh makes it once it has connected and authenticated).
func (h *Host) connect() (*childproc.Process, error) {
	_ = os.Remove(h.ctl) // what a killed master left
	p, err := childproc.Start(childproc.Config{
		Name:        "ssh master for host " + h.cfg.Name,
		Spec:        childproc.Spec{Path: h.cfg.ssh(), Args: h.masterArgs()},
		Guard:       h.cfg.Guard,
		Grace:       stopGrace,
		StderrLevel: func(string) slog.Level { return slog.LevelWarn },
		Logger:      h.log,
	})
	if err != nil {
		return nil, h.err("connect", "", fmt.Errorf("%w: %w", ErrSSH, err))
	}
	go func() {
		_, _ = io.Copy(io.Discard, p.Stdout())
		p.StdoutDone()
	}()
	limit := 3 * h.cfg.connectTimeout()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if fi, err := os.Stat(h.ctl); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return p, nil
		}
		select {
		case <-p.Done():
			return nil, h.exitErr("connect", ErrSSH, p.Err())
		case <-deadline.C:
			p.Kill(childproc.Because(fmt.Sprintf("it did not connect within %v", limit)))
			<-p.Done()
			return nil, h.exitErr("connect", fmt.Errorf("%w: not connected within %v", ErrSSH, limit), p.Err())
		case <-h.closing:
			p.Kill(childproc.Because("the host was closed"))
			<-p.Done()
			return nil, ErrClosed
		case <-tick.C:
		}
	}
}

// masterArgs are the master connection's ssh arguments: the options this
// package needs, the caller's, then the defaults the caller may override.
func (h *Host) masterArgs() []string {
	args := []string{"-M", "-N", "-T", "-S", h.ctl,
		"-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-o", "BatchMode=yes", "-e", "none"}
	args = append(args, h.cfg.SSHArgs...)
	return append(args,
		"-o", "ConnectTimeout="+seconds(h.cfg.connectTimeout()),
		"-o", "ServerAliveInterval="+seconds(h.cfg.keepAlive()),
		"-o", fmt.Sprintf("ServerAliveCountMax=%d", DefaultKeepAliveCount),
		"-o", "ExitOnForwardFailure=yes",
		"--", h.cfg.Dest)
}

// muxArgs are the arguments of an ssh that uses the master connection:
// no configuration of its own (it only talks to the socket), and a
// ProxyCommand that fails with a clear message instead of letting ssh
// connect by itself when the master is not there.
func (h *Host) muxArgs() []string {
	return []string{"-F", "/dev/null", "-S", h.ctl,
		"-o", "ControlMaster=no", "-o", "BatchMode=yes", "-o", "ProxyCommand=" + downCommand(h.cfg.Name),
		"-e", "none", "-T"}
}

// downMarker is in what an ssh over a missing master says.
const downMarker = "the ssh master connection for host"

func downCommand(name string) string {
	return `/bin/sh -c "echo 'atm-agent-mcp: ` + downMarker + ` ` + name + ` is down' >&2; exit 255"`
}

// established runs once the master is up, before Up returns: the agents a
// previous connection (or serve) left on the host are stopped, the
// forwards are made again.
func (h *Host) established() error {
	ctx, cancel := h.opContext()
	defer cancel()
	if h.cfg.Instance != "" {
		if stopped, err := h.reap(ctx, h.cfg.Instance); err != nil {
			h.log.Warn("could not stop the agents left on the host", "instance", h.cfg.Instance, "err", err)
		} else if len(stopped) > 0 {
			h.log.Warn("stopped agents left running on the host", "instance", h.cfg.Instance, "sessions", stopped)
		}
	}
	return h.remakeForwards(ctx)
}

// opContext bounds the supervisor's own operations over the connection;
// Close cancels it.
func (h *Host) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(h.closeCtx, 3*h.cfg.connectTimeout()+h.cfg.reapGrace())
}

// shutdown is Close's work on a live connection: reap, then end the
// master.
func (h *Host) shutdown(p *childproc.Process) {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.connectTimeout()+h.cfg.reapGrace())
	defer cancel()
	if h.cfg.Instance != "" {
		if stopped, err := h.reap(ctx, h.cfg.Instance); err != nil {
			h.log.Warn("could not stop this instance's agents on the host", "instance", h.cfg.Instance, "err", err)
		} else if len(stopped) > 0 {
			h.log.Info("stopped this instance's agents on the host", "instance", h.cfg.Instance, "sessions", stopped)
		}
	}
	h.stopMaster(p)
	h.log.Info("ssh connection to host closed")
}

// stopMaster ends the master: `ssh -O exit`, then the process's stop.
func (h *Host) stopMaster(p *childproc.Process) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*stopGrace)
	defer cancel()
	_, _ = h.control(ctx, "exit")
	_ = p.Stop(ctx)
	_ = os.Remove(h.ctl)
}

// exitErr is the *Error for op of a process that ended: err, what the
// process said on stderr, and its exit status underneath.
func (h *Host) exitErr(op string, err error, ee *childproc.ExitError) *Error {
	return h.err(op, ee.Stderr, fmt.Errorf("%w: %w", err, ee))
}
