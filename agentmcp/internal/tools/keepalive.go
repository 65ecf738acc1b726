package tools

import (
	"fmt"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// DefaultProgressInterval is how long a call that waits for a turn goes
// without progress before it is told what the agent is doing: well inside
// the 30 minutes after which Claude Code aborts a stdio call that sent
// neither a result nor progress, and rare enough to cost nothing.
const DefaultProgressInterval = time.Minute

// retryPoll is how often a call waiting for its turn looks for a new
// retry notice of Codex (Session.Problem: a pointer read under the
// session's lock).
const retryPoll = 200 * time.Millisecond

// retryProgressEvery is the least time between two progress notifications
// that pass on Codex's retry notices: the first goes at once, later ones
// (Codex retries with back-off, "Reconnecting... 2/5") at most this often,
// each with the latest notice.
const retryProgressEvery = 5 * time.Second

// keepAlive sends c progress about s whenever ProgressInterval passes
// without any (a turn that runs one long command sends no events, so no
// progress either): what the agent is doing and for how long. When Codex
// says it cannot reach the model and will retry, that goes out at once
// (within retryPoll; at most every retryProgressEvery), whatever the
// interval, even none: otherwise the caller would learn it only from the
// timeout's error, minutes later. Only for a request with a progress
// token; the returned stop ends it, and nothing is sent once the request
// has been answered (mcpconn.Progress).
func (e *Env) keepAlive(c *mcpconn.ToolCall, s *session.Session) (stop func()) {
	if c.Progress == nil || s == nil {
		return func() {}
	}
	every := e.cfg.ProgressInterval
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var keep <-chan time.Time // nil without an interval
		var t *time.Timer
		if every > 0 {
			t = time.NewTimer(every)
			defer t.Stop()
			keep = t.C
		}
		poll := time.NewTicker(retryPoll)
		defer poll.Stop()
		seen := s.Problem() // a notice from before this call is no news
		var lastRetry time.Time
		for {
			select {
			case <-done:
				return
			case <-poll.C:
				p := s.Problem()
				if p == nil || p == seen || time.Since(lastRetry) < retryProgressEvery {
					continue
				}
				seen = p
				if !p.Retrying {
					continue
				}
				lastRetry = time.Now()
				c.Progress.Send(doing{identity: s.Record().Identity, retrying: p.Message}.note(time.Since(start)))
				continue
			case <-keep:
			}
			last := c.Progress.LastSent()
			if last.Before(start) {
				last = start
			}
			if quiet := time.Since(last); quiet < every {
				t.Reset(every - quiet) // progress went out meanwhile
				continue
			}
			c.Progress.Send(activityNote(s.Detail(0), time.Since(start)))
			t.Reset(every)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// activityNote says what the agent of d is doing, for progress.
func activityNote(d session.Detail, elapsed time.Duration) string {
	return doingOf(d).note(elapsed)
}

// doing is what a session's detail tells of what its agent is doing.
type doing struct {
	identity string
	approval string // the command or question of the first pending approval
	retrying string // Codex's retry notice
	// item is the turn's last item (command, file_change, tool_call) while
	// it runs.
	itemType, itemSummary string
}

func doingOf(d session.Detail) doing {
	w := doing{identity: d.Identity}
	if len(d.PendingApprovals) > 0 {
		a := d.PendingApprovals[0]
		w.approval = firstNonEmpty(a.Command, a.Question)
	}
	if p := d.CodexProblem; p != nil && p.Retrying {
		w.retrying = p.Message
	}
	if n := len(d.CurrentTurnItems); n > 0 && running(d.CurrentTurnItems[n-1].Status) {
		w.itemType, w.itemSummary = d.CurrentTurnItems[n-1].Type, d.CurrentTurnItems[n-1].Summary
	}
	return w
}

// note is the progress message: "[arch] running `make test` (2m0s into
// the turn)".
func (w doing) note(elapsed time.Duration) string {
	what := "working"
	switch {
	case w.approval != "":
		what = "waiting for approval: " + clip(w.approval, 80)
	case w.retrying != "":
		what = "Codex cannot reach the model: " + clip(w.retrying, 200) + " (retrying)"
	case w.itemType == "command":
		what = "running `" + clip(w.itemSummary, 80) + "`"
	case w.itemType == "file_change":
		what = "applying a patch (" + w.itemSummary + ")"
	case w.itemType == "tool_call":
		what = "calling " + w.itemSummary
	case w.itemType != "":
		what = w.itemType + " " + clip(w.itemSummary, 80)
	}
	return fmt.Sprintf("[%s] %s (%s into the turn)", w.identity, what, elapsed.Round(time.Second))
}

// running reports whether a turn item's status says it runs ("running" as
// the proxy records mcp-server's begin events, Codex app-server's
// "inProgress").
func running(status string) bool {
	return status == "running" || status == "inProgress" || status == "in_progress"
}
