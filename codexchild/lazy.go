package codexchild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// lazyChild is the start-once state both backends share. mu guards it and
// the embedding backend's own fields.
type lazyChild struct {
	mu          sync.Mutex
	startDone   chan struct{} // closed when the start attempt is over; nil before
	startErr    error         // a failed start (an *ExitError or a start error)
	ch          *child
	w           jsonrpcframe.Writer
	exitErr     *ExitError    // set once the child has exited
	exitHandled chan struct{} // closed when every pending call was failed and OnExit ran
	closed      bool
}

// childHooks are what a backend plugs into the shared start: its
// subcommand, its reader and exit watcher, and its protocol handshake.
type childHooks struct {
	subcommand string
	dispatch   func(*jsonrpcframe.Message) // one message of the child, on the reader goroutine
	// idle is called on the reader goroutine when it has dispatched all
	// the child has written so far, before it waits for more, and at the
	// end of the child's output. optional.
	idle      func()
	watchExit func(*child)
	handshake func() error
}

// ensureStarted starts the child and does the handshake, once; callers wait
// for it until ctx ends.
func (l *lazyChild) ensureStarted(ctx context.Context, cfg Config, log *slog.Logger, h childHooks) error {
	l.mu.Lock()
	if l.closed && l.startDone == nil {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.startDone == nil {
		if cfg.Bin == "" {
			l.mu.Unlock()
			return errors.New("codexchild: config has no Bin")
		}
		l.startDone = make(chan struct{})
		go l.start(cfg, log, h)
	}
	done := l.startDone
	l.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.exitErr != nil:
		return l.exitErr
	case l.startErr != nil:
		return l.startErr
	}
	return nil
}

// start runs the child and the handshake; it closes startDone.
// startedOK reports, without waiting, whether the child's start and
// handshake are over (ensureStarted then returns at once).
func (l *lazyChild) startedOK() bool {
	l.mu.Lock()
	done := l.startDone
	l.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// onceFunc returns a function that calls f (optional) the first time only.
func onceFunc(f func()) func() {
	if f == nil {
		return func() {}
	}
	return sync.OnceFunc(f)
}

func (l *lazyChild) start(cfg Config, log *slog.Logger, h childHooks) {
	defer close(l.startDone)
	args := append(append([]string(nil), cfg.Args...), h.subcommand)
	ch, err := startChild(childConfig{
		Bin: cfg.Bin, Args: args, Env: cfg.env(), Dir: cfg.Dir,
		Grace: cfg.grace(), Logger: log,
	})
	if err != nil {
		log.Error("codex child failed to start", "err", err)
		l.mu.Lock()
		l.startErr = err
		l.mu.Unlock()
		return
	}
	log.Info("codex child started", "pid", ch.cmd.Process.Pid, "bin", cfg.Bin, "args", args)
	l.mu.Lock()
	l.ch = ch
	l.w = jsonrpcframe.NewLineWriter(ch)
	l.exitHandled = make(chan struct{})
	closed := l.closed
	l.mu.Unlock()
	go readLoop(ch, jsonrpcframe.NewLineReader(idleReader(ch.out, h.idle), nil), log, h.dispatch, h.idle)
	go h.watchExit(ch)
	if closed {
		_ = ch.stop(context.Background())
		<-l.exitHandled
		return
	}
	if err := h.handshake(); err != nil {
		log.Error("codex handshake failed", "err", err)
		var ee *ExitError
		if !errors.As(err, &ee) {
			// A child that cannot do the handshake is of no use: stop it.
			_ = ch.stop(context.Background())
			<-l.exitHandled
		}
		l.mu.Lock()
		l.startErr = fmt.Errorf("codexchild: %s handshake: %w", h.subcommand, err)
		if l.exitErr != nil {
			l.startErr = l.exitErr
		}
		l.mu.Unlock()
	}
}

// idleReader returns r reading the child's stdout with idle (optional)
// called whenever r is about to wait for the child's output: from a
// jsonrpcframe.Pipe when it finds the pipe empty, else before every read.
func idleReader(r io.Reader, idle func()) io.Reader {
	if idle == nil {
		return r
	}
	if p, ok := r.(*jsonrpcframe.Pipe); ok {
		p.OnEmpty(idle)
		return p
	}
	return &beforeRead{r: r, fn: idle}
}

// beforeRead calls fn before every Read of r.
type beforeRead struct {
	r  io.Reader
	fn func()
}

func (b *beforeRead) Read(p []byte) (int, error) {
	b.fn()
	return b.r.Read(p)
}

// readLoop reads the child's stdout until EOF and hands every message to
// dispatch. Bad lines are logged and skipped. idle (optional) is called
// when the output ends.
func readLoop(ch *child, r jsonrpcframe.Reader, log *slog.Logger, dispatch func(*jsonrpcframe.Message), idle func()) {
	defer ch.stdoutFinished()
	if idle != nil {
		defer idle()
	}
	for {
		m, err := r.Read()
		if err != nil {
			var me *jsonrpcframe.MessageError
			if errors.As(err, &me) {
				log.Warn("codex child wrote a bad line on stdout; skipped", "err", me.Detail, "line", string(me.Raw))
				continue
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				log.Warn("codex child stdout", "err", err)
			}
			return
		}
		dispatch(m)
	}
}
