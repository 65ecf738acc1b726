package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
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
type codex struct {
	cur        atomic.Pointer[backendBox]
	newBackend func() (codexchild.Backend, error) // nil: restarts unavailable
	mode       string
	log        *slog.Logger
	audit      *session.Auditor
	// afterRestart tells the sessions (set once the Manager exists).
	afterRestart func() int

	mu       sync.Mutex // serialises restarts; guards the fields below
	crashes  []time.Time
	restarts int
	lastAt   time.Time
	closed   bool
}

// backendBox is one backend and whether its crash was recorded.
type backendBox struct {
	b       codexchild.Backend
	crashed atomic.Bool
}

func newCodex(first codexchild.Backend, opts Options, log *slog.Logger, audit *session.Auditor) *codex {
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

// Turn runs the turn on the current child; on_demand first replaces a
// crashed child.
func (c *codex) Turn(ctx context.Context, req codexchild.TurnRequest) (*codexchild.Result, error) {
	box := c.get()
	if c.mode == RestartOnDemand && dead(box) {
		c.noteCrash(box)
		if _, err := c.restart(ctx, false, "on demand"); err != nil {
			if req.Release != nil {
				req.Release()
			}
			return nil, err
		}
		box = c.get()
	}
	res, err := box.b.Turn(ctx, req)
	var ee *codexchild.ExitError
	if errors.As(err, &ee) {
		c.noteCrash(box)
	}
	return res, err
}

func (c *codex) Interrupt(ctx context.Context, threadID string) error {
	return c.get().b.Interrupt(ctx, threadID)
}

func (c *codex) Status() codexchild.Status { return c.get().b.Status() }

func (c *codex) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.get().b.Close(ctx)
}

// Forward and Notify pass MCP through to an mcp-server child.
func (c *codex) Forward(ctx context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	pt, ok := c.get().b.(codexchild.Passthrough)
	if !ok {
		return nil, codexchild.ErrUnsupported
	}
	return pt.Forward(ctx, m)
}

func (c *codex) Notify(ctx context.Context, m *jsonrpcframe.Message) error {
	pt, ok := c.get().b.(codexchild.Passthrough)
	if !ok {
		return codexchild.ErrUnsupported
	}
	return pt.Notify(ctx, m)
}

// noteCrash records the crash of box's child, once: the audit, the log and
// the crash-loop count.
func (c *codex) noteCrash(box *backendBox) {
	if !box.crashed.CompareAndSwap(false, true) {
		return
	}
	st := box.b.Status()
	how := "exited"
	if st.Exit != nil {
		how = st.Exit.String()
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.crashes = append(c.crashes, time.Now())
	c.mu.Unlock()
	c.log.Error("codex child crashed", "status", how, "restart", c.mode)
	c.audit.Append(registry.Entry{Event: "codex_crashed", Outcome: how})
}

// restart replaces the child: refused when restarts are unavailable, when
// the proxy is closing, while the child runs (unless force: its turns in
// flight then fail), and after maxCrashes crashes within crashWindow.
func (c *codex) restart(ctx context.Context, force bool, why string) (tools.RestartReport, error) {
	if c.newBackend == nil {
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrInvalidRequest, nil, "this proxy cannot restart Codex; restart the MCP server")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrInvalidSessionParams, nil, "the proxy is shutting down")
	}
	box := c.get()
	st := box.b.Status()
	if st.Running && !force {
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"pid": st.PID},
			"Codex is running (pid %d); pass force: true to restart it anyway (its turns in flight fail)", st.PID)
	}
	recent := 0
	for _, t := range c.crashes {
		if time.Since(t) < crashWindow {
			recent++
		}
	}
	if recent >= maxCrashes {
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrChildProcessDead, map[string]any{"crashes": recent, "window_secs": crashWindow.Seconds()},
			"Codex crashed %d times in the last %s; not restarting it again (a crash loop): see the log and agent_status, fix the cause, then restart the MCP server", recent, crashWindow)
	}
	previous := "never started"
	if st.Exit != nil {
		previous = st.Exit.String()
	} else if st.Running {
		previous = "running (forced)"
	}
	nb, err := c.newBackend()
	if err != nil {
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrChildProcessDead, nil, "cannot make a new Codex child: %v", err)
	}
	if st.Running || !st.Started {
		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = box.b.Close(closeCtx)
		cancel()
	}
	c.cur.Store(&backendBox{b: nb})
	c.restarts++
	c.lastAt = time.Now()
	n := 0
	if c.afterRestart != nil {
		n = c.afterRestart()
	}
	c.log.Info("codex restarted", "why", why, "previous", previous, "restarts", c.restarts, "sessions", n)
	c.audit.Append(registry.Entry{Event: "codex_restarted", Outcome: fmt.Sprintf("%s; previous child: %s; %d live session(s) continue", why, previous, n)})
	return tools.RestartReport{Backend: string(nb.Status().Kind), Restarts: c.restarts, Sessions: n, Previous: previous}, nil
}

// Restart is agent_restart_codex: it restarts the child and starts the new
// one at once (its pid in the report).
func (c *codex) Restart(ctx context.Context, force bool) (tools.RestartReport, error) {
	rep, err := c.restart(ctx, force, "agent_restart_codex")
	if err != nil {
		return rep, err
	}
	if s, ok := c.get().b.(codexchild.Starter); ok {
		if err := s.Start(ctx); err != nil {
			return rep, session.BackendError(err)
		}
	}
	st := c.get().b.Status()
	rep.PID, rep.Backend = st.PID, string(st.Kind)
	return rep, nil
}

// Restarts are the restart counters agent_status shows.
func (c *codex) Restarts() tools.RestartCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := tools.RestartCounts{Mode: c.mode, Crashes: len(c.crashes), Restarts: c.restarts}
	if !c.lastAt.IsZero() {
		rc.LastRestart = c.lastAt.UTC().Format(time.RFC3339)
	}
	return rc
}
