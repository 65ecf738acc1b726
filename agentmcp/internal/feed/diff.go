package feed

import (
	"context"
	"strconv"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// An isolated agent (a worktree of its own) is published with its
// worktree, branch and the diff stat of its change against its base
// (Agent.Worktree), and a view can ask for the change itself ({"type":
// "diff"}). Both come from the user's git, which takes tens of
// milliseconds on a large checkout: the stat is read by a goroutine of its
// own (statLoop) when the agent's turns start or end, never by the
// publisher, which takes the last stat read; a diff is read on a goroutine
// of the request's.

// Diffs read an isolated agent's change against its base (package places
// over workspace, through the composition root).
type Diffs interface {
	// Stat sums the change of s's worktree; ok is false when s has none.
	Stat(ctx context.Context, s *session.Session) (stat DiffStat, ok bool, err error)
	// Patch is the change as a unified patch, at most limit characters
	// (more says that more follows); ok is false when s has no worktree.
	Patch(ctx context.Context, s *session.Session, limit int) (patch string, more, ok bool, err error)
}

// DiffStat sums a change: files, lines added and removed.
type DiffStat struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Removed int `json:"removed"`
}

// String is like git's: "3 files changed, 10 insertions(+), 2 deletions(-)".
func (d DiffStat) String() string {
	return strconv.Itoa(d.Files) + " files changed, " + strconv.Itoa(d.Added) + " insertions(+), " + strconv.Itoa(d.Removed) + " deletions(-)"
}

// Worktree is an isolated agent's worktree as a view shows it.
type Worktree struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Stat is its change against its base as last read (at the start or
	// end of a turn); nil before it was read. Released is what a close
	// did with it ("kept": it holds work, "removed": it held none);
	// StatText is git's line for a kept one.
	Stat     *DiffStat `json:"stat,omitempty"`
	Released string    `json:"released,omitempty"`
	StatText string    `json:"stat_text,omitempty"`
}

// maxPatch is how much of a change a view is sent, in characters.
const maxPatch = 200_000

// statWant is when an agent's stat was last asked for: at which turn and
// status (a turn that starts or ends asks again).
type statWant struct {
	turns  int
	status string
}

// worktreeOf is the worktree of a session's record, with its last stat;
// nil without one. f.mu is held.
func (f *Feed) worktreeOfLocked(rec registry.Session) *Worktree {
	w := rec.Worktree
	if w == nil {
		return nil
	}
	out := &Worktree{Path: w.Path, Branch: w.Branch, Base: w.Base, Released: w.Released, StatText: w.Stat}
	if st, ok := f.stats[rec.AgentID]; ok {
		out.Stat = &st
	}
	return out
}

// wantStatLocked queues a read of s's stat when its turns or status
// changed since the last one asked; f.mu is held.
func (f *Feed) wantStatLocked(s *session.Session, st session.State) {
	if f.cfg.Diffs == nil || st.Record.Worktree == nil || !st.Record.Status.Live() {
		return
	}
	w := statWant{turns: st.Turns, status: st.Status}
	if prev, ok := f.statAsked[st.Record.AgentID]; ok && prev == w {
		return
	}
	f.statAsked[st.Record.AgentID] = w
	f.statQueue[s] = true
	select {
	case f.statWake <- struct{}{}:
	default:
	}
}

// statLoop reads the queued stats, one at a time, and publishes each
// agent again with its own.
func (f *Feed) statLoop() {
	defer f.wg.Done()
	ctx, cancel := f.ctxStop()
	defer cancel()
	for {
		select {
		case <-f.stop:
			return
		case <-f.statWake:
		}
		f.mu.Lock()
		queue := f.statQueue
		f.statQueue = map[*session.Session]bool{}
		f.mu.Unlock()
		for s := range queue {
			rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
			stat, ok, err := f.cfg.Diffs.Stat(rctx, s)
			rcancel()
			id := s.Record().AgentID
			if err != nil {
				f.log.Debug("cannot read an agent's diff stat", "agent_id", id, "err", err)
				continue
			}
			if !ok {
				continue
			}
			f.mu.Lock()
			f.stats[id] = stat
			f.mu.Unlock()
			f.SessionChanged(s) // published with it
		}
	}
}

// diff answers a view's request for an agent's change.
func (f *Feed) diff(c *client, fr Frame) {
	defer f.wg.Done()
	res := Frame{Type: "diffed", ID: fr.ID, AgentID: fr.AgentID}
	var s *session.Session
	if f.sessions != nil {
		s = f.sessions.Get(fr.AgentID)
	}
	switch {
	case s == nil:
		res.Error = "no session with agent_id " + fr.AgentID + " in this serve"
	case f.cfg.Diffs == nil:
		res.Error = "this serve reads no diffs (git is missing)"
	default:
		ctx, cancel := f.ctxStop()
		ctx, tcancel := context.WithTimeout(ctx, 30*time.Second)
		patch, more, ok, err := f.cfg.Diffs.Patch(ctx, s, maxPatch)
		tcancel()
		cancel()
		switch {
		case err != nil:
			res.Error = err.Error()
		case !ok:
			res.Error = s.Record().Identity + " has no worktree of its own: its change is not told apart from the checkout's"
		default:
			res.OK, res.Text, res.More = true, patch, more
		}
	}
	c.send(encode(res))
}
