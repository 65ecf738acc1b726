package proxy

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// The values of Options.CodexRestart.
const (
	// RestartManual: a crashed Codex stays down until the client calls
	// agent_restart_codex (or reconnects); FR-11.2.
	RestartManual = "manual"
	// RestartOnDemand: the next call that needs a crashed Codex starts a
	// fresh one first.
	RestartOnDemand = "on_demand"
)

// Crash-loop guard: this many crashes within crashWindow refuse restarts.
const (
	maxCrashes  = 3
	crashWindow = 60 * time.Second
)

// codex is the Codex child the sessions and the tools use: the current
// backend, which a restart replaces with a fresh one (Options.NewBackend).
// Nothing restarts by itself unless Options.CodexRestart is on_demand.
// In-flight turns of a crashed child keep their error; turns are never
// retried. After a restart every live session continues: app-server
// resumes its thread (thread/resume, its per-thread tools configured
// again), mcp-server opens a new thread with the session's recent
// messages (session.Manager.AfterRestart).
//
// Design notes. Restarts coalesce (restart.go): one runs at a time, on a
// goroutine of its own, and every call made meanwhile (agent_restart_codex
// with or without force, an on-demand restart, a turn) waits for it and
// gets its result. mu guards only bookkeeping: the swap of the current
// child is made under it, the old child's close and the new one's start
// outside it, so agent_status answers during a slow restart. A child the
// proxy stops itself (a restart, shutdown) is marked stopped under mu
// before it is closed, and its exit is never counted as a crash: the crash
// window counts only children that died by themselves. While Codex is down
// and will not come back by itself (manual mode, restarts refused, no
// restart possible, shutting down) or a restart runs, auto-mail pauses
// (MailPaused: asked of each session's own backend, so only for the Codex
// sessions) and a new session is refused at once (Unavailable); every
// error about the dead child says what brings it back (recovery), in
// Codex's words (codexerrors.go). What the sessions ask of a backend
// besides (its capabilities: sandboxed, its settings, one child restarted
// as a whole, its name) is asked of the current child (capabilities
// below).
type codex struct {
	cur        atomic.Pointer[backendBox]
	newBackend func() (backend.Backend, error) // nil: restarts unavailable
	mode       string
	log        *slog.Logger
	audit      *session.Auditor
	// afterRestart tells the sessions (set once the Manager exists, before
	// Run).
	afterRestart func() int
	// restarted runs after a restart whose new child started: it resumes
	// the mail delivery paused meanwhile. optional; set before Run.
	restarted func()

	mu       sync.Mutex // guards the fields below; never held across I/O, a child's start or its close
	crashes  []crash    // real crashes since the proxy started, oldest first
	restarts int
	lastAt   time.Time
	closed   bool
	op       *restartOp // the restart in progress, or nil
}

// crash is one child that died by itself.
type crash struct {
	at     time.Time
	status string // how it died: "killed by signal killed"
}

// backendBox is one backend, whether its crash was noted and whether the
// proxy stopped it itself.
type backendBox struct {
	b       backend.Backend
	crashed atomic.Bool // its crash was noted (noteCrash), once
	stopped atomic.Bool // set under codex.mu before the proxy closes it: its exit is no crash
	// exit is the last *backend.ExitError a call on it returned (with
	// the child's last stderr lines), or nil.
	exit atomic.Pointer[backend.ExitError]
}

// exitError is how box's dead child died, as its calls report it.
func (box *backendBox) exitError() *backend.ExitError {
	if ee := box.exit.Load(); ee != nil {
		return ee
	}
	st := box.b.Status()
	if st.Exit == nil {
		return &backend.ExitError{}
	}
	return &backend.ExitError{Status: *st.Exit}
}

func newCodex(first backend.Backend, opts Options, log *slog.Logger, audit *session.Auditor) *codex {
	c := &codex{newBackend: opts.NewBackend, mode: opts.CodexRestart, log: log, audit: audit}
	if c.mode == "" {
		c.mode = RestartManual
	}
	c.cur.Store(&backendBox{b: first})
	return c
}

func (c *codex) get() *backendBox { return c.cur.Load() }

// dead reports whether the box's child has exited (it had started).
func dead(box *backendBox) bool {
	st := box.b.Status()
	return st.Started && !st.Running && st.Exit != nil
}

// observe returns the current box, noting its crash first when its child
// died by itself and nobody noticed yet (no turn was running).
func (c *codex) observe() *backendBox {
	box := c.get()
	if dead(box) {
		c.noteCrash(box)
	}
	return box
}

// Turn runs the turn on the current child. It waits for a restart in
// progress first; on_demand replaces a crashed child first.
func (c *codex) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	box, err := c.ready(ctx, &req)
	if err != nil {
		return nil, turnError(err)
	}
	res, err := box.b.Turn(ctx, req)
	return res, turnError(c.explain(box, err))
}

// ready returns the box a call should use: after the restart in progress,
// if any, and after an on-demand restart of a crashed child. Before it may
// wait it releases the caller (req.Release, once).
func (c *codex) ready(ctx context.Context, req *backend.TurnRequest) (*backendBox, error) {
	release := func() {
		if req != nil && req.Release != nil {
			req.Release()
			req.Release = nil
		}
	}
	c.mu.Lock()
	op := c.op
	c.mu.Unlock()
	if op != nil {
		release()
		if _, err := op.wait(ctx); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	box := c.observe()
	if c.mode == RestartOnDemand && dead(box) && !box.stopped.Load() {
		release()
		if _, err := c.restart(ctx, box, false, "on demand"); err != nil {
			return nil, err
		}
		box = c.get()
	}
	return box, nil
}

func (c *codex) Interrupt(ctx context.Context, threadID string) error {
	box := c.get()
	return c.explain(box, box.b.Interrupt(ctx, threadID))
}

func (c *codex) Status() backend.Status { return c.get().b.Status() }

// Close stops the child (shutdown): no crash is counted from now on, no
// restart starts, and one in progress is waited for (within ctx) so that
// no child it started outlives the proxy.
func (c *codex) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	box := c.get()
	box.stopped.Store(true)
	op := c.op
	c.mu.Unlock()
	// A restart in progress has swapped in its child already (box), or
	// will see closed and swap nothing.
	err := box.b.Close(ctx)
	if op != nil {
		_, _ = op.wait(ctx)
	}
	return err
}

// What the sessions ask of the Codex backend (package codexchild/backend's
// capabilities) is asked of the current child: every Codex child answers
// alike (codexchild.Codex), so a restart changes nothing here.

// Sandboxed reports whether the current child's agents run in a sandbox.
func (c *codex) Sandboxed() bool { return backend.IsSandboxed(c.get().b) }

// Settings are the settings of its own the current child takes.
func (c *codex) Settings() []string { return backend.SettingsOf(c.get().b) }

// Options makes a thread's options as the current child does; nil when it
// takes no settings.
func (c *codex) Options(values map[string]any) any {
	if cf, ok := c.get().b.(backend.Configurable); ok {
		return cf.Options(values)
	}
	return nil
}

// RestartsAsWhole reports whether the current child runs every thread (it
// is this supervisor's to restart).
func (c *codex) RestartsAsWhole() bool { return backend.RestartsAsWhole(c.get().b) }

// Name is how people call the current child's agents.
func (c *codex) Name() string { return backend.NameOf(c.get().b, registry.DefaultKind) }

// Steer adds input to a running turn of the current child
// (backend.Steerer: app-server's turn/steer); ErrUnsupported when the
// child cannot (mcp-server).
func (c *codex) Steer(ctx context.Context, threadID, text string) error {
	box := c.get()
	st, ok := box.b.(backend.Steerer)
	if !ok {
		return backend.ErrUnsupported
	}
	return c.explain(box, st.Steer(ctx, threadID, text))
}

// Fork forks a thread on the current child (backend.Forker: app-server's
// thread/fork), after a restart in progress; ErrUnsupported when the child
// cannot (mcp-server).
func (c *codex) Fork(ctx context.Context, req backend.ForkRequest) (*backend.ForkResult, error) {
	box, err := c.ready(ctx, nil)
	if err != nil {
		return nil, turnError(err)
	}
	f, ok := box.b.(backend.Forker)
	if !ok {
		return nil, backend.ErrUnsupported
	}
	res, err := f.Fork(ctx, req)
	if errors.Is(err, backend.ErrUnsupported) || errors.Is(err, backend.ErrForkRefused) {
		return nil, err
	}
	return res, turnError(c.explain(box, err))
}

// StructuredOutput asks the current child whether its turns take an output
// schema (backend.StructuredOutputter: app-server's outputSchema).
func (c *codex) StructuredOutput(ctx context.Context) error {
	return backend.Structured(ctx, c.get().b)
}

// Forward and Notify pass MCP through to an mcp-server child.
func (c *codex) Forward(ctx context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	box := c.get()
	pt, ok := box.b.(codexchild.Passthrough)
	if !ok {
		return nil, backend.ErrUnsupported
	}
	resp, err := pt.Forward(ctx, m)
	return resp, c.explain(box, err)
}

func (c *codex) Notify(ctx context.Context, m *jsonrpcframe.Message) error {
	box := c.get()
	pt, ok := box.b.(codexchild.Passthrough)
	if !ok {
		return backend.ErrUnsupported
	}
	return c.explain(box, pt.Notify(ctx, m))
}

// explain adds to an error about box's dead child what brings Codex back
// (a *backend.RecoveryError), noting the crash first; other errors pass
// unchanged.
func (c *codex) explain(box *backendBox, err error) error {
	var ee *backend.ExitError
	if err == nil || !errors.As(err, &ee) && !errors.Is(err, backend.ErrHandshake) {
		return err
	}
	if ee != nil {
		box.exit.Store(ee)
		c.noteCrash(box)
	}
	advice, data := c.recovery(box)
	return &backend.RecoveryError{Err: err, Advice: advice, Data: data}
}

// noteCrash records the crash of box's child, once, unless the proxy
// stopped it or it could not be run at all (backend.ErrNotFound): the audit, the log and the crash-loop count. The crash that
// makes a crash loop also logs, once, that restarts are refused and until
// when.
func (c *codex) noteCrash(box *backendBox) {
	if ee := box.exit.Load(); ee != nil && ee.NotFound != nil {
		return // Codex is not installed: no crash, nor a crash loop refusing the restart after installing
	}
	if box.stopped.Load() || box.crashed.Load() {
		return
	}
	st := box.b.Status()
	how := "exited"
	if st.Exit != nil {
		how = st.Exit.String()
	}
	now := time.Now()
	c.mu.Lock()
	// Claimed under the lock that a restart takes to mark the box stopped:
	// whoever notes the crash first (a status reader, the restart's own
	// observe) counts it before the restart can mark it stopped.
	if c.closed || box.stopped.Load() || !box.crashed.CompareAndSwap(false, true) {
		c.mu.Unlock()
		return
	}
	before := len(c.recentLocked(now))
	c.crashes = append(c.crashes, crash{at: now, status: how})
	recent := c.recentLocked(now)
	until := c.refusedUntilLocked(now)
	c.mu.Unlock()
	c.log.Error("codex child crashed", "status", how, "restart", c.mode)
	c.audit.Append(registry.Entry{Event: "codex_crashed", Outcome: how})
	if before < maxCrashes && len(recent) >= maxCrashes {
		c.log.Error("codex crashed too often: restarts are refused until the crash window has passed; mail waits",
			"crashes", len(recent), "window", crashWindow, "refused_until", until.UTC().Format(time.RFC3339),
			"statuses", crashList(recent))
	}
}
