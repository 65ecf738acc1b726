package codexchild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// stdinWriteTimeout bounds a write to the child's stdin that the pipe
// cannot take at once (childproc.Config.WriteTimeout).
var stdinWriteTimeout = childproc.DefaultWriteTimeout // a var for tests

// childName is how the log and errors call a Codex child.
const childName = "codex child"

// core is the request/response core both backends embed: the child started
// once on first use, the backend's own request ids and the table of calls
// waiting for the child's answer, serialised writes to the child's stdin,
// and the end of everything when the child exits. C is the backend's call
// type.
//
// mu guards the core and the embedding backend's own fields, because a
// backend changes its own maps (threads, turns) in the same critical
// section as the pending table; it is never held across I/O. wmu is held
// across one write to the child; mu and wmu are never held together (the
// package doc's Locks lists every lock of the module).
//
// (The core is not a package of its own, nor sourcegraph/jsonrpc2: what it
// shares is the child's lifecycle as much as the id table; see doc.go.)
type core[C pendingCall] struct {
	mu          sync.Mutex
	startDone   chan struct{} // closed when the start attempt is over; nil before
	startErr    error         // a failed start (an *ExitError or a start error)
	ch          *childproc.Process
	w           jsonrpcframe.Writer
	exitErr     *backend.ExitError // set once the child has exited
	exitHandled chan struct{}      // closed when every pending call was failed and OnExit ran
	closed      bool
	nextID      int64
	pending     map[jsonrpcframe.ID]C // the backend's requests waiting for an answer
	// bg are the backend's goroutines that Close waits for (background);
	// added to under mu while not closed.
	bg sync.WaitGroup

	wmu sync.Mutex // serialises writes to the child, so that a write's blocked hook is its own

	// plain: write without "jsonrpc" until the child is seen using it
	// (app-server); versioned records that it was.
	plain     bool
	versioned atomic.Bool

	version string // Codex's version, from the handshake ("" before)
	// handshook is set once the handshake succeeded: an exit with code
	// 127 before it means the binary could not be run (notfound.go).
	handshook atomic.Bool

	// Set by the backend at construction:
	cfg   Config
	log   *slog.Logger
	kind  Kind
	hooks childHooks
	// forgetLocked (optional) is called with mu held when a call leaves
	// pending through take.
	forgetLocked func(C)
	// exitLocked (optional) is called with mu held when the child has
	// exited, after pending was emptied; the function it returns (optional)
	// runs after the pending calls failed, before Config.OnExit.
	exitLocked func(*backend.ExitError) func()
	onExit     func(backend.ExitStatus)
}

// pendingCall is what the core needs of a backend's call.
type pendingCall interface {
	comparable
	callID() jsonrpcframe.ID
	// fail ends the call with the child's death.
	fail(*backend.ExitError)
	// ended returns the error of the reply another goroutine sent the call
	// (after take found it gone), waiting for it; nil when none is awaited
	// or the reply had no error.
	ended() error
}

// childHooks are what a backend plugs into the shared start: its
// subcommand, its reader and its protocol handshake.
type childHooks struct {
	subcommand string
	dispatch   func(*jsonrpcframe.Message) // one message of the child, on the reader goroutine
	// idle is called on the reader goroutine when it has dispatched all
	// the child has written so far, before it waits for more, and at the
	// end of the child's output. optional.
	idle      func()
	handshake func() error
}

// ensureStarted starts the child and does the handshake, once; callers wait
// for it until ctx ends.
func (l *core[C]) ensureStarted(ctx context.Context) error {
	cfg := l.cfg
	l.mu.Lock()
	if l.closed && l.startDone == nil {
		l.mu.Unlock()
		return backend.ErrClosed
	}
	if l.startDone == nil {
		if cfg.Bin == "" {
			l.mu.Unlock()
			return errors.New("codexchild: config has no Bin")
		}
		l.startDone = make(chan struct{})
		go l.start()
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
	case l.startErr != nil:
		return l.startErr
	case l.exitErr != nil:
		return l.exitErr
	}
	return nil
}

// start runs the child and the handshake; it closes startDone.
// startedOK reports, without waiting, whether the child's start and
// handshake are over (ensureStarted then returns at once).
func (l *core[C]) startedOK() bool {
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

func (l *core[C]) start() {
	cfg, log, h := l.cfg, l.log, l.hooks
	defer close(l.startDone)
	args := append(append([]string(nil), cfg.Args...), h.subcommand)
	ch, err := childproc.Start(childproc.Config{
		Name:  childName,
		Spec:  childproc.Spec{Path: cfg.Bin, Args: args, Env: cfg.env(), Dir: cfg.Dir},
		Guard: cfg.Guard, Grace: cfg.grace(), WriteTimeout: stdinWriteTimeout,
		StderrLevel: stderrLevel, Logger: log,
	})
	if err != nil {
		if len(cfg.Guard) == 0 && childproc.ExecFailed(err) {
			err = notFound(cfg, childproc.ExecDetail(err))
		} else {
			err = fmt.Errorf("codexchild: %w", err)
		}
		log.Error("codex child failed to start", "err", err)
		l.mu.Lock()
		l.startErr = err
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	l.ch = ch
	l.w = jsonrpcframe.NewLineWriter(ch)
	l.exitHandled = make(chan struct{})
	closed := l.closed
	l.mu.Unlock()
	go readLoop(ch, jsonrpcframe.NewLineReader(idleReader(ch.Stdout(), h.idle), nil), log, h.dispatch, h.idle)
	go l.watchExit(ch)
	if closed {
		_ = ch.Stop(context.Background())
		<-l.exitHandled
		return
	}
	err = h.handshake()
	if err == nil {
		l.handshook.Store(true)
	}
	if err != nil {
		log.Error("codex handshake failed", "err", err)
		var ee *backend.ExitError
		died := errors.As(err, &ee)
		if !died {
			// A child that cannot do the handshake is of no use: stop it.
			_ = ch.Stop(context.Background())
			<-l.exitHandled
		}
		l.mu.Lock()
		if died && l.exitErr != nil {
			l.startErr = l.exitErr // it died: how is the news
		} else {
			l.startErr = fmt.Errorf("codexchild: %s %w: %w; it was stopped", h.subcommand, backend.ErrHandshake, err)
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
func readLoop(ch *childproc.Process, r jsonrpcframe.Reader, log *slog.Logger, dispatch func(*jsonrpcframe.Message), idle func()) {
	defer ch.StdoutDone()
	if idle != nil {
		defer idle()
	}
	g := childproc.NewGarbage(log, childName, nil)
	defer g.Flush()
	for {
		m, err := r.Read()
		if err != nil {
			var me *jsonrpcframe.MessageError
			if errors.As(err, &me) {
				if g.Bad(me) {
					// Nothing it writes after this counts as a
					// message; Drain only counts the lines.
					ch.Kill(g.Err())
					g.Drain(r)
					return
				}
				continue
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				log.Warn("codex child stdout", "err", err)
			}
			return
		}
		g.Good()
		dispatch(m)
	}
}

// send gives m the core's next id, registers the call mk makes for it (mk
// runs with mu held and may refuse it) and writes m. blocked (optional) is
// called before the write waits for room in the child's stdin, or for the
// child's exit after a failed write; it may be called more than once. When
// the write fails the call is taken back, or, when the exit handler (or the
// reader) took it first, the error of the reply it got is returned.
func (l *core[C]) send(m *jsonrpcframe.Message, mk func(id jsonrpcframe.ID) (C, error), blocked func()) (C, error) {
	var zero C
	l.mu.Lock()
	if l.exitErr != nil {
		defer l.mu.Unlock()
		return zero, l.exitErr
	}
	if l.w == nil {
		l.mu.Unlock()
		return zero, backend.ErrClosed
	}
	l.nextID++
	m.ID = jsonrpcframe.IntID(l.nextID)
	c, err := mk(m.ID)
	if err != nil {
		l.mu.Unlock()
		return zero, err
	}
	l.pending[m.ID] = c
	l.mu.Unlock()
	if err := l.write(m, blocked); err != nil {
		if l.take(c) {
			return zero, err
		}
		if blocked != nil {
			blocked()
		}
		if e := c.ended(); e != nil {
			return zero, e
		}
		return zero, err
	}
	return c, nil
}

// take removes c from pending; the caller then owns its reply.
func (l *core[C]) take(c C) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.takeLocked(c)
}

// takeLocked is take with mu held.
func (l *core[C]) takeLocked(c C) bool {
	id := c.callID()
	if l.pending[id] != c {
		return false
	}
	delete(l.pending, id)
	if l.forgetLocked != nil {
		l.forgetLocked(c)
	}
	return true
}

// popLocked removes and returns the call waiting for the answer with id;
// mu is held.
func (l *core[C]) popLocked(id jsonrpcframe.ID) (C, bool) {
	c, ok := l.pending[id]
	if ok {
		delete(l.pending, id)
	}
	return c, ok
}

// write writes one message to the child. A failed write to a child that is
// dying reports the *ExitError. blocked is as for send.
func (l *core[C]) write(m *jsonrpcframe.Message, blocked func()) error {
	l.mu.Lock()
	w, ch := l.w, l.ch
	l.mu.Unlock()
	if w == nil {
		return backend.ErrClosed
	}
	if l.plain {
		inKind := *m
		inKind.Versioned = l.versioned.Load()
		m = &inKind
	}
	l.wmu.Lock()
	ch.SetBlocked(blocked)
	err := w.Write(m)
	ch.SetBlocked(nil)
	l.wmu.Unlock()
	if err == nil {
		return nil
	}
	if blocked != nil {
		blocked() // waits below for the child's exit
	}
	select {
	case <-ch.Done():
		<-l.exitHandled
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.exitErr
	case <-time.After(time.Second):
	}
	return fmt.Errorf("codexchild: write to codex child: %w", err)
}

// watchExit fails every pending call when the child has exited, then runs
// Config.OnExit.
func (l *core[C]) watchExit(ch *childproc.Process) {
	<-ch.Done()
	ee := exitError(ch.Err())
	if !l.handshook.Load() {
		ee.NotFound = notFoundAtStart(l.cfg, ee)
	}
	l.mu.Lock()
	l.exitErr = ee
	closed := l.closed
	calls := make([]C, 0, len(l.pending))
	for _, c := range l.pending {
		calls = append(calls, c)
	}
	clear(l.pending)
	var after func()
	if l.exitLocked != nil {
		after = l.exitLocked(ee)
	}
	l.mu.Unlock()
	if closed {
		l.log.Info("codex child stopped", "status", ee.Status.String(), "pending", len(calls))
	} else {
		l.log.Error("codex child died", "status", ee.Status.String(), "pending", len(calls), "stderr", ee.Stderr)
	}
	for _, c := range calls {
		c.fail(ee)
	}
	if after != nil {
		after()
	}
	if l.onExit != nil {
		l.onExit(ee.Status)
	}
	close(l.exitHandled)
}

// Close stops the child gracefully (close stdin; SIGTERM to its process
// group after Config.StopGrace; SIGKILL after another) and returns once it
// has exited and every pending call has failed with an *ExitError. When ctx
// ends first, the group is killed at once. Later calls fail with the
// *ExitError (ErrClosed if the child never started). Close is idempotent.
func (l *core[C]) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	ch, started := l.ch, l.startDone
	l.mu.Unlock()
	var err error
	if ch != nil {
		err = ch.Stop(ctx)
	}
	if started != nil {
		<-started
	}
	l.mu.Lock()
	handled := l.exitHandled
	l.mu.Unlock()
	if handled != nil {
		<-handled
	}
	l.bg.Wait() // the child is gone: their calls and writes fail at once
	return err
}

// background runs f on a goroutine that Close waits for; once Close has
// begun it runs nothing and reports false.
func (l *core[C]) background(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.bg.Go(f)
	return true
}

// Start starts the child and does its handshake now rather than at the
// first call, and returns how the start went (nil when it had started
// already). ctx bounds the wait, not the start.
func (l *core[C]) Start(ctx context.Context) error { return l.ensureStarted(ctx) }

// Kind returns the backend's protocol.
func (l *core[C]) Kind() Kind { return l.kind }

// Version returns the Codex version the handshake reported ("" before).
func (l *core[C]) Version() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

// Status reports the child's state.
func (l *core[C]) Status() backend.Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := backend.Status{Protocol: string(l.kind), Started: l.ch != nil, Version: l.version}
	if l.ch != nil {
		s.PID = l.ch.PID()
		s.Running = l.exitErr == nil
	}
	if l.exitErr != nil {
		st := l.exitErr.Status
		s.Exit = &st
	}
	return s
}

// answer writes a response to a request of the child, logging a failure.
func (l *core[C]) answer(id jsonrpcframe.ID, resp *jsonrpcframe.Message) {
	if err := l.write(resp, nil); err != nil {
		l.log.Warn("codex: answering the child failed", "id", id.String(), "err", err)
	}
}

// toOnEvent hands an event that belongs to no running turn to
// Config.OnEvent, or drops it.
func (l *core[C]) toOnEvent(ev backend.Event) {
	if l.cfg.OnEvent != nil {
		l.cfg.OnEvent(ev)
		return
	}
	l.log.Debug("codex: event of no running turn dropped", "method", ev.Method, "type", ev.Type, "thread", ev.ThreadID)
}
