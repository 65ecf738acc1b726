package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// restartOp is one restart in progress; every call made meanwhile waits
// for it and gets its result.
type restartOp struct {
	done    chan struct{} // closed when rep and err are set
	rep     tools.RestartReport
	err     error
	callers atomic.Int32 // the calls that wait for it
}

// wait returns the restart's result, or ctx's error when ctx ends first
// (the restart goes on).
func (op *restartOp) wait(ctx context.Context) (tools.RestartReport, error) {
	select {
	case <-op.done:
		return op.rep, op.err
	case <-ctx.Done():
		return tools.RestartReport{}, ctx.Err()
	}
}

// Restart is agent_restart_codex: it replaces the child and starts the new
// one at once (its pid in the report), or joins the restart in progress.
func (c *codex) Restart(ctx context.Context, force bool) (tools.RestartReport, error) {
	return c.restart(ctx, nil, force, "agent_restart_codex")
}

// restart replaces the child, or joins the restart in progress and returns
// its result. It is refused when restarts are unavailable, when the proxy
// is closing, while the child runs (unless force: its turns in flight then
// fail), and after maxCrashes crashes within crashWindow, until the oldest
// of them leaves the window. seen, when set, is the crashed box an
// on-demand restart replaces: if another restart replaced it already,
// there is nothing to do.
func (c *codex) restart(ctx context.Context, seen *backendBox, force bool, why string) (tools.RestartReport, error) {
	if c.newBackend == nil {
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrInvalidRequest, nil, "this proxy cannot restart Codex; restart the MCP server")
	}
	box := c.observe()
	st := box.b.Status()
	now := time.Now()
	c.mu.Lock()
	if op := c.op; op != nil {
		op.callers.Add(1)
		c.mu.Unlock()
		return op.wait(ctx)
	}
	switch {
	case c.closed:
		c.mu.Unlock()
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrInvalidSessionParams, nil, "the proxy is shutting down")
	case c.get() != box:
		// A restart ended between observe and here.
		c.mu.Unlock()
		if seen != nil {
			return tools.RestartReport{}, nil
		}
		return c.restart(ctx, nil, force, why)
	case seen != nil && seen != box:
		c.mu.Unlock()
		return tools.RestartReport{}, nil
	case st.Running && !force:
		until := c.refusedUntilLocked(now)
		c.mu.Unlock()
		if !until.IsZero() {
			return tools.RestartReport{}, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"pid": st.PID, "restart_refused_until": stamp(until)},
				"Codex is running (pid %d); restarts are refused until %s after a crash loop", st.PID, stamp(until))
		}
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"pid": st.PID},
			"Codex is running (pid %d); pass force: true to restart it anyway (its turns in flight fail)", st.PID)
	}
	if until := c.refusedUntilLocked(now); !until.IsZero() {
		recent := c.recentLocked(now)
		c.mu.Unlock()
		return tools.RestartReport{}, proxyerr.New(proxyerr.ErrChildProcessDead, refusalData(recent, until),
			"Codex crashed %d times in the last %s; not restarting it again until %s, in %s (a crash loop; crashes: %s): fix the cause (see the log), then restart the MCP server, or call agent_restart_codex again after %s",
			len(recent), crashWindow, stamp(until), until.Sub(now).Round(time.Second), strings.Join(crashList(recent), "; "), stamp(until))
	}
	op := &restartOp{done: make(chan struct{})}
	op.callers.Add(1)
	c.op = op
	c.mu.Unlock()
	go c.run(op, box, why)
	return op.wait(ctx)
}

// run is one restart, on a goroutine of its own: the swap under the lock,
// the old child's close and the new one's start outside it; then the log,
// the audit, the waiters and the mail.
func (c *codex) run(op *restartOp, old *backendBox, why string) {
	nbox, rep, err := c.replace(old, why)
	c.mu.Lock()
	c.op = nil
	c.mu.Unlock()
	switch {
	case err != nil && nbox == nil:
		c.log.Error("codex restart failed", "why", why, "err", err)
	case err != nil:
		err = codexError(c.explain(nbox, err))
		c.log.Error("codex restarted, but the new child did not start", "why", why, "previous", rep.Previous, "restarts", rep.Restarts, "err", err)
		c.audit.Append(registry.Entry{Event: "codex_restarted", Outcome: fmt.Sprintf("%s; previous child: %s; the new child did not start: %v", why, rep.Previous, err)})
	default:
		c.log.Info("codex restarted", "why", why, "previous", rep.Previous, "restarts", rep.Restarts, "sessions", rep.Sessions, "pid", rep.PID)
		c.audit.Append(registry.Entry{Event: "codex_restarted", Outcome: fmt.Sprintf("%s; previous child: %s; %d live session(s) continue", why, rep.Previous, rep.Sessions)})
	}
	op.rep, op.err = rep, err
	close(op.done)
	if err == nil && c.restarted != nil {
		c.restarted()
	}
}

// replace makes the new child current under the lock (marking the old one
// stopped: its exit is no crash), tells the sessions, closes the old child
// and starts the new one outside the lock. nbox is nil when nothing was
// replaced.
func (c *codex) replace(old *backendBox, why string) (nbox *backendBox, rep tools.RestartReport, err error) {
	st := old.b.Status()
	rep.Previous = "never started"
	if st.Exit != nil {
		rep.Previous = st.Exit.String()
	} else if st.Running {
		rep.Previous = "running (forced)"
	}
	nb, err := c.newBackend()
	if err != nil {
		return nil, rep, proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, nil, "cannot make a new Codex child: %v", err)
	}
	nbox = &backendBox{b: nb}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = nb.Close(context.Background()) // never started: nothing to wait for
		return nil, rep, proxyerr.New(proxyerr.ErrInvalidSessionParams, nil, "the proxy is shutting down")
	}
	old.stopped.Store(true)
	c.cur.Store(nbox)
	c.restarts++
	c.lastAt = time.Now()
	rep.Restarts = c.restarts
	c.mu.Unlock()
	if c.afterRestart != nil {
		rep.Sessions = c.afterRestart()
	}
	if st := old.b.Status(); st.Running || !st.Started {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = old.b.Close(closeCtx)
		cancel()
	}
	if s, ok := nb.(backend.Starter); ok {
		err = s.Start(context.Background()) // bounded by the handshake timeout
	}
	now := nb.Status()
	rep.PID, rep.Backend = now.PID, now.Protocol
	return nbox, rep, err
}

// Restarts are the restart counters agent_status shows, and whether mail
// waits for a restart.
func (c *codex) Restarts() tools.RestartCounts {
	paused := c.MailPaused()
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := tools.RestartCounts{Mode: c.mode, Crashes: len(c.crashes), Restarts: c.restarts, Restarting: c.op != nil, MailWaitingOnRestart: paused}
	if !c.lastAt.IsZero() {
		rc.LastRestart = c.lastAt.UTC().Format(time.RFC3339)
	}
	if until := c.refusedUntilLocked(now); !until.IsZero() {
		rc.RestartRefusedUntil = stamp(until)
	}
	for _, cr := range c.recentLocked(now) {
		rc.RecentCrashes = append(rc.RecentCrashes, tools.CrashRecord{At: stamp(cr.at), Status: cr.status})
	}
	return rc
}

// MailPaused reports whether auto-mail to Codex sessions must wait
// (session.Session.MailPaused, asked by mailTarget.Deliver): a
// restart is in progress, or the child is dead and the next turn would not
// bring it back (manual mode, restarts refused or unavailable, shutting
// down). The mail stays unread; run's restarted resumes the delivery.
func (c *codex) MailPaused() bool {
	box := c.observe()
	isDead := dead(box)
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.op != nil {
		return true
	}
	return isDead && !c.selfRestartsLocked(box, now)
}

// Unavailable is session.Manager's check before it creates a session: nil
// when a turn can run now, waits for the restart in progress, or restarts
// Codex itself (on_demand); else CHILD_PROCESS_DEAD with what brings Codex
// back.
func (c *codex) Unavailable() error {
	box := c.observe()
	if !dead(box) {
		return nil
	}
	now := time.Now()
	c.mu.Lock()
	wait := c.op != nil || c.selfRestartsLocked(box, now)
	c.mu.Unlock()
	if wait {
		return nil
	}
	return codexError(c.explain(box, box.exitError()))
}

// selfRestartsLocked reports whether the next turn replaces box's dead
// child by itself: on_demand, with a restart possible and not refused.
func (c *codex) selfRestartsLocked(box *backendBox, now time.Time) bool {
	return c.mode == RestartOnDemand && c.newBackend != nil && !c.closed && !box.stopped.Load() && c.refusedUntilLocked(now).IsZero()
}

// recovery says what brings Codex back after box's child died, as a clause
// for an error message, with data for the error: only what the proxy will
// accept now.
func (c *codex) recovery(box *backendBox) (string, map[string]any) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return "the proxy is shutting down", nil
	case box.stopped.Load():
		return "the proxy stopped it to restart Codex: the sessions continue on the new child; call codex-reply again", nil
	case c.newBackend == nil:
		return "this proxy cannot restart Codex: restart the MCP server to start a new one", nil
	}
	if until := c.refusedUntilLocked(now); !until.IsZero() {
		recent := c.recentLocked(now)
		return fmt.Sprintf("restarts are refused until %s (Codex crashed %d times within %s: %s): fix the cause (see the log), then restart the MCP server, or call agent_restart_codex after %s",
			stamp(until), len(recent), crashWindow, strings.Join(crashList(recent), "; "), stamp(until)), refusalData(recent, until)
	}
	switch {
	case c.op != nil:
		return "a restart is in progress: call again once it is done (agent_status shows child.restarting)", map[string]any{"restarting": true}
	case c.mode == RestartOnDemand:
		return "the next call starts a new one (codex_restart = on_demand): the sessions continue on it", nil
	}
	return "call agent_restart_codex to start a new one: the sessions continue on it", nil
}

// recentLocked returns the crashes within crashWindow of now, oldest first.
func (c *codex) recentLocked(now time.Time) []crash {
	var recent []crash
	for _, cr := range c.crashes {
		if now.Sub(cr.at) < crashWindow {
			recent = append(recent, cr)
		}
	}
	return recent
}

// refusedUntilLocked returns when restarts are allowed again after a crash
// loop (fewer than maxCrashes crashes within crashWindow), or the zero time
// when they are allowed now.
func (c *codex) refusedUntilLocked(now time.Time) time.Time {
	recent := c.recentLocked(now)
	if len(recent) < maxCrashes {
		return time.Time{}
	}
	return recent[len(recent)-maxCrashes].at.Add(crashWindow)
}

// refusalData is the data of an error about refused restarts.
func refusalData(recent []crash, until time.Time) map[string]any {
	list := make([]map[string]any, len(recent))
	for i, cr := range recent {
		list[i] = map[string]any{"at": stamp(cr.at), "status": cr.status}
	}
	return map[string]any{"restart_refused": true, "restart_refused_until": stamp(until), "crashes": list,
		"window_secs": crashWindow.Seconds()}
}

// crashList says each crash: "2026-11-25T12:00:01.123Z killed by signal killed".
func crashList(recent []crash) []string {
	out := make([]string, len(recent))
	for i, cr := range recent {
		out[i] = stamp(cr.at) + " " + cr.status
	}
	return out
}

// stamp is a time as errors and agent_status give it: UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
