package places

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

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
	trackers := ps.trackers
	ps.trackers = map[string]*workspace.Tracker{}
	ps.mu.Unlock()
	ps.cancel()
	ps.start.Do(func() { close(ps.done) }) // never started
	<-ps.done
	for _, tr := range trackers {
		tr.Close()
	}
	ps.radar.Close()
	ps.mu.Lock()
	hosts := ps.hostRadars
	ps.hostRadars = map[string]*workspace.Radar{}
	ps.mu.Unlock()
	for _, r := range hosts {
		r.Close()
	}
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
		ps.pass()
	}
}

// pass looks at every queued turn, at once (no batching window): the
// mail of an overlap a turn made is sent before pass returns.
func (ps *Places) pass() {
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

// look reads one worktree's change, gives it to the radar and tells the
// new overlaps.
func (ps *Places) look(t pendingTurn) {
	ps.mu.Lock()
	tr := ps.trackers[t.p.AgentID]
	ps.mu.Unlock()
	if tr == nil {
		return // released meanwhile
	}
	ctx, cancel := context.WithTimeout(ps.ctx, ps.lookTimeout)
	defer cancel()
	files, err := tr.Changes(ctx)
	ps.mu.Lock()
	info, live := ps.live[t.p.AgentID]
	ps.mu.Unlock()
	if !live {
		return // released meanwhile
	}
	if err != nil {
		ps.log.Warn("radar: cannot read the worktree's change", "agent_id", t.p.AgentID, "path", t.p.Path, "err", err)
		return
	}
	who := workspace.RadarAgent{Identity: info.identity, Branch: info.branch, Team: ps.cfg.MailTeam, Lead: ps.cfg.Lead}
	radar := ps.radarOf(t.p.Host)
	news := radar.UpdateAs(t.p.AgentID, t.p.Repo, who, files)
	ps.mu.Lock()
	_, live = ps.live[t.p.AgentID]
	ps.mu.Unlock()
	if !live { // released while it was compared: its Forget may have come first
		radar.Forget(t.p.AgentID)
		return
	}
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
	// Host is the host of the repository ("" for this machine).
	Host string `json:"host,omitempty"`
}

// lookTimeout bounds one look of the radar (the git work and the
// comparison) unless Config.LookTimeout says otherwise: a turn's overlaps
// are told within it of the turn's end, or not at all (logged), and the
// next queued look is not held up.
const lookTimeout = 5 * time.Second

// Overlaps returns every overlap between the live worktrees now, told or
// not: of this serve's agents and, on this machine's repositories they
// work in, of every other serve's (the shared radar); on a host, of this
// serve's agents there.
func (ps *Places) Overlaps() []Overlap {
	ps.mu.Lock()
	radars := map[string]*workspace.Radar{"": ps.radar}
	for host, r := range ps.hostRadars {
		radars[host] = r
	}
	ps.mu.Unlock()
	var out []Overlap
	for _, host := range slices.Sorted(maps.Keys(radars)) {
		for _, o := range radars[host].Overlaps() {
			out = append(out, Overlap{Overlap: o, AIdentity: o.A.Who.Identity, ABranch: o.A.Who.Branch,
				BIdentity: o.B.Who.Identity, BBranch: o.B.Who.Branch, Host: host})
		}
	}
	if out == nil {
		out = []Overlap{}
	}
	return out
}

// tell mails an overlap to both agents and to their leads (one copy to
// each: two serves' agents have two), each in its own team, as the serve
// that runs it introduced it to the radar.
func (ps *Places) tell(o workspace.Overlap) {
	a, b := o.A.Who, o.B.Who
	ps.mu.Lock()
	_, live := ps.live[o.A.Agent]
	ps.mu.Unlock()
	if !live || a.Identity == "" || b.Identity == "" {
		return // released meanwhile, or not introduced
	}
	ps.log.Info("radar: two agents change one file", "file", o.File, "kind", o.Kind, "a", a.Identity, "b", b.Identity)
	if ps.cfg.ATM == nil {
		return
	}
	subject := "conflict radar: " + o.File
	type mail struct{ to, team, text string }
	mails := []mail{
		{a.Identity, teamOr(a.Team, ps.cfg.MailTeam), agentText(o.File, o.Kind, o.A, o.B)},
		{b.Identity, teamOr(b.Team, ps.cfg.MailTeam), agentText(o.File, o.Kind, o.B, o.A)},
	}
	for _, s := range []workspace.RadarAgent{a, b} {
		lead, team := teamOr(s.Lead, ps.cfg.Lead), teamOr(s.Team, ps.cfg.MailTeam)
		dup := lead == ""
		for _, m := range mails {
			dup = dup || m.to == lead && m.team == team
		}
		if !dup {
			mails = append(mails, mail{lead, team, leadText(o)})
		}
	}
	for _, m := range mails {
		to := m.to
		if m.team != ps.cfg.MailTeam {
			to += "@" + m.team // another serve's team
		}
		if err := ps.mail(ps.ctx, to, subject, m.text); err != nil {
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
func agentText(file string, k workspace.OverlapKind, me, other workspace.Side) string {
	oi := other.Who
	return fmt.Sprintf("[conflict radar] %s (branch %s) is changing %s too, %s: yours %s, %s's %s. "+
		"Agree with %s (atm_send) who changes what before you go on, so that one of you does not have to redo it; the lead has a copy of this.",
		oi.Identity, oi.Branch, file, how(k), ranges(me), oi.Identity, ranges(other), oi.Identity)
}

// leadText is the lead's copy.
func leadText(o workspace.Overlap) string {
	a, b := o.A.Who, o.B.Who
	return fmt.Sprintf("[conflict radar] %s (branch %s) and %s (branch %s) both change %s, %s: %s's %s, %s's %s. Both were told.",
		a.Identity, a.Branch, b.Identity, b.Branch, o.File, how(o.Kind), a.Identity, ranges(o.A), b.Identity, ranges(o.B))
}

// teamOr is s, or def when s is "".
func teamOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
