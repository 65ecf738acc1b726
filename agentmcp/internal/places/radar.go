package places

import (
	"fmt"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
)

// TurnEnded queues the session's worktree for the radar; it never waits.
func (ps *Places) TurnEnded(p *session.Place) { ps.queue(p, false) }

// queue puts p in the radar's queue (a later turn of the same agent
// replaces an earlier one not looked at yet) and wakes the radar.
func (ps *Places) queue(p *session.Place, quiet bool) {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return
	}
	if prev, ok := ps.pending[p.AgentID]; ok && !prev.quiet {
		quiet = false
	}
	ps.pending[p.AgentID] = pendingTurn{p: p, quiet: quiet}
	ps.mu.Unlock()
	select {
	case ps.wake <- struct{}{}:
	default:
	}
}

// Start starts the radar's goroutine (once).
func (ps *Places) Start() {
	ps.start.Do(func() { go ps.run() })
}

// Close stops the radar and waits for its goroutine: what is queued is
// dropped.
func (ps *Places) Close() {
	ps.mu.Lock()
	ps.closed = true
	ps.pending = map[string]pendingTurn{}
	ps.mu.Unlock()
	ps.cancel()
	ps.start.Do(func() { close(ps.done) }) // never started
	<-ps.done
}

// run is the radar's goroutine.
func (ps *Places) run() {
	defer close(ps.done)
	for {
		select {
		case <-ps.ctx.Done():
			return
		case <-ps.wake:
		}
		ps.mu.Lock()
		work := ps.pending
		ps.pending = map[string]pendingTurn{}
		ps.mu.Unlock()
		for _, t := range work {
			if ps.ctx.Err() != nil {
				return
			}
			ps.look(t)
		}
	}
}

// look reads one worktree's change, gives it to the radar and tells the
// new overlaps.
func (ps *Places) look(t pendingTurn) {
	files, err := ps.m.Changes(ps.ctx, workspacePlace(t.p))
	if err != nil {
		ps.log.Warn("radar: cannot read the worktree's change", "agent_id", t.p.AgentID, "path", t.p.Path, "err", err)
		return
	}
	ps.mu.Lock()
	_, live := ps.live[t.p.AgentID]
	ps.mu.Unlock()
	if !live {
		return // released meanwhile
	}
	news := ps.radar.Update(t.p.AgentID, t.p.Repo, files)
	if t.quiet {
		return
	}
	for _, o := range news {
		ps.tell(o)
	}
}

// Overlap is an overlap as agent_status lists it: the radar's, with each
// agent's identity and branch.
type Overlap struct {
	workspace.Overlap
	AIdentity string `json:"a_identity"`
	ABranch   string `json:"a_branch"`
	BIdentity string `json:"b_identity"`
	BBranch   string `json:"b_branch"`
}

// Overlaps returns every overlap between the live worktrees now, told or
// not.
func (ps *Places) Overlaps() []Overlap {
	all := ps.radar.Overlaps()
	out := make([]Overlap, 0, len(all))
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, o := range all {
		a, b := ps.live[o.A.Agent], ps.live[o.B.Agent]
		out = append(out, Overlap{Overlap: o, AIdentity: a.identity, ABranch: a.branch, BIdentity: b.identity, BBranch: b.branch})
	}
	return out
}

// tell mails an overlap to both agents and to the lead.
func (ps *Places) tell(o workspace.Overlap) {
	ps.mu.Lock()
	a, b := ps.live[o.A.Agent], ps.live[o.B.Agent]
	ps.mu.Unlock()
	if a.identity == "" || b.identity == "" {
		return // one of them was released meanwhile
	}
	ps.log.Info("radar: two agents change one file", "file", o.File, "kind", o.Kind, "a", a.identity, "b", b.identity)
	if ps.cfg.ATM == nil {
		return
	}
	subject := "conflict radar: " + o.File
	mails := []struct{ to, text string }{
		{a.identity, agentText(o.File, o.Kind, o.A, a, o.B, b)},
		{b.identity, agentText(o.File, o.Kind, o.B, b, o.A, a)},
	}
	if ps.cfg.Lead != "" && ps.cfg.Lead != a.identity && ps.cfg.Lead != b.identity {
		mails = append(mails, struct{ to, text string }{ps.cfg.Lead, leadText(o, a, b)})
	}
	for _, m := range mails {
		if err := ps.mail(ps.ctx, m.to, subject, m.text); err != nil {
			ps.log.Warn("radar: cannot mail", "to", m.to, "err", err)
		}
	}
}

// how says how two changes of one file meet.
func how(k workspace.OverlapKind) string {
	switch k {
	case workspace.SameLines:
		return "on the same lines (merging one after the other will conflict)"
	case workspace.Rename:
		return "and one of them renames it"
	}
	return "on other lines (git can merge both, but check they fit)"
}

// ranges is what a side changes: "lines 3-5, 9", "renamed to b.txt".
func ranges(s workspace.Side) string {
	switch s.Status {
	case "A":
		return "added"
	case "D":
		return "deleted"
	case "R":
		return "renamed to " + s.Path
	}
	if len(s.Ranges) == 0 {
		return "changed"
	}
	var rs []string
	for _, r := range s.Ranges {
		rs = append(rs, r.String())
	}
	return "lines " + strings.Join(rs, ", ")
}

// agentText is the mail to the agent of side me about the other side.
func agentText(file string, k workspace.OverlapKind, me workspace.Side, mi agentInfo, other workspace.Side, oi agentInfo) string {
	return fmt.Sprintf("[conflict radar] %s (branch %s) is changing %s too, %s: yours %s, %s's %s. "+
		"Agree with %s (atm_send) who changes what before you go on, so that one of you does not have to redo it; the lead has a copy of this.",
		oi.identity, oi.branch, file, how(k), ranges(me), oi.identity, ranges(other), oi.identity)
}

// leadText is the lead's copy.
func leadText(o workspace.Overlap, a, b agentInfo) string {
	return fmt.Sprintf("[conflict radar] %s (branch %s) and %s (branch %s) both change %s, %s: %s's %s, %s's %s. Both were told.",
		a.identity, a.branch, b.identity, b.branch, o.File, how(o.Kind), a.identity, ranges(o.A), b.identity, ranges(o.B))
}
