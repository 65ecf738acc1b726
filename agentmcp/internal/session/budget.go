package session

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// Token budgets. A session has one when the configuration gives one
// (budget_tokens, or its role's), or when it was set at run time
// (Session.SetBudget, codex-reply's budget_tokens: kept in its record, so
// that it holds over a resume); the team has one when the configuration
// gives one (team_budget_tokens) or it was set at run time
// (TeamBudgets.Set: kept in the team's registry directory, for every
// serve of the team). A budget counts total tokens as the agents report
// them (backend.Usage.TotalTokens): a session's over its life, the
// team's over every session of the team, closed ones and other serves'
// included (from their records).
//
// At 80 % of a budget the lead is told once (Config.BudgetNotice); at
// 100 % it is told again, no new turn starts (BUDGET_EXCEEDED, and its
// mail waits unread: TryMail refuses it), and with Budgets.Interrupt the
// running turn is interrupted (after budgetGrace, if it has not ended by
// itself: an ACP agent reports its tokens with its answer). A summary asked for at a close is never
// held back. Raising the budget lets turns start again and offers the
// waiting mail at once; a budget raised is told once more at its own 80 %.
//
// The budget watcher is one goroutine of the Manager: woken by each report
// of usage that can cross a budget (from the backend's reader, without
// waiting; none while there is no budget: Session.budgetWatched), and
// every budgetTick for what other serves spent, it compares and tells. The check
// at a turn's start is the caller's own, synchronous: a turn never starts
// on a budget the watcher has not looked at yet.

// Budgets are the configured token budgets. The zero value has none.
type Budgets struct {
	// Session is a session's budget in tokens when its role sets none.
	// optional: 0 means none.
	Session int64
	// Roles are the budgets of the role presets that set one, by role.
	// optional.
	Roles map[string]int64
	// Team is the team's budget in tokens: all its sessions together.
	// optional: 0 means none (one set at run time wins).
	Team int64
	// Interrupt also interrupts the running turn of a session (or, for
	// the team's, of every session of this serve) that reaches its budget
	// (budget_interrupt); without it the running turn ends as it would
	// and only the next one is refused.
	Interrupt bool
}

// forRole is the configured budget of a session of role.
func (b Budgets) forRole(role string) int64 {
	if v := b.Roles[role]; v > 0 {
		return v
	}
	return b.Session
}

// BudgetState is a budget and how much of it is used, as agent_status,
// agent_sessions and the view show it.
type BudgetState struct {
	// Tokens is the budget.
	Tokens int64 `json:"budget_tokens"`
	// Used are the tokens spent against it.
	Used int64 `json:"used_tokens"`
	// Percent is Used of Tokens, rounded down.
	Percent int `json:"percent"`
	// Exceeded: Used reached Tokens; no new turn starts.
	Exceeded bool `json:"exceeded"`
	// Raised: the budget was set at run time, not configured.
	Raised bool `json:"raised,omitempty"`
}

func budgetState(budget, used int64, raised bool) *BudgetState {
	if budget <= 0 {
		return nil
	}
	return &BudgetState{Tokens: budget, Used: used, Percent: int(used * 100 / budget), Exceeded: used >= budget, Raised: raised}
}

// BudgetNotice is what the lead is told about a budget.
type BudgetNotice struct {
	// Team is set for the team's budget; else the session's AgentID and
	// Identity are.
	Team              bool
	AgentID, Identity string
	BudgetState
	// Interrupted are the identities whose running turn was interrupted
	// (Budgets.Interrupt).
	Interrupted []string
}

// budgetTick is how often the watcher looks without being woken: other
// serves' spending reaches the team's budget through their records.
const budgetTick = 2 * time.Second

// teamBudgetFresh is how long a team budget read from the registry is
// taken as it is.
const teamBudgetFresh = time.Second

// budgetWatch is the Manager's budget watcher (see the top of this file).
type budgetWatch struct {
	m      *Manager
	wakeCh chan struct{} // 1-buffered

	mu sync.Mutex // guards the fields below; a leaf
	// told80 and told100 are, per agent_id ("" for the team), the budget
	// whose 80 % and 100 % the lead was told of.
	told80, told100 map[string]int64
	team            int64 // the team's budget as last read
	teamRaised      bool
	teamRead        time.Time
}

func newBudgetWatch(m *Manager) *budgetWatch {
	return &budgetWatch{m: m, wakeCh: make(chan struct{}, 1), told80: map[string]int64{}, told100: map[string]int64{}}
}

// budgetWatched reports whether a usage report of s can cross a budget:
// s has one of its own (or its role's), or the team has one (configured,
// or set at run time as last read). Only then does the report wake the
// watcher: with no budget anywhere there is nothing to look at, and a
// wake-up of its goroutine with every turn's token count cost the turn
// about 20 µs on its way back to the client on a 2-core machine (the
// out-hop of BenchmarkToolsCallOverhead). A team budget that another serve
// sets is seen at the next tick (budgetTick), and from then on watched.
func (s *Session) budgetWatched() bool {
	s.mu.Lock()
	own := s.rec.BudgetTokens > 0 || s.m.cfg.Budgets.forRole(s.rec.Role) > 0
	s.mu.Unlock()
	if own || s.m.cfg.Budgets.Team > 0 {
		return true
	}
	w := s.m.budgets
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.team > 0
}

// wake asks the watcher to look; it never blocks.
func (w *budgetWatch) wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

// run is the watcher's goroutine; it ends with the Manager's context.
func (w *budgetWatch) run() {
	defer w.m.wg.Done()
	tick := time.NewTicker(budgetTick)
	defer tick.Stop()
	for {
		select {
		case <-w.m.ctx.Done():
			return
		case <-w.wakeCh:
		case <-tick.C:
		}
		w.check()
	}
}

// check compares every live session's usage and the team's with their
// budgets and tells what crossed 80 % or 100 % since.
func (w *budgetWatch) check() {
	m := w.m
	var running []turnMark
	for _, s := range m.Live() {
		s.mu.Lock()
		busy, started := s.running != nil, s.turnStarted
		s.mu.Unlock()
		if busy {
			running = append(running, turnMark{s, started})
		}
		st := s.Budget()
		if st == nil {
			continue
		}
		rec := s.Record()
		warn, reached := w.crossed(rec.AgentID, st)
		if !warn && !reached {
			continue
		}
		n := BudgetNotice{AgentID: rec.AgentID, Identity: rec.Identity, BudgetState: *st}
		if reached && m.cfg.Budgets.Interrupt && busy {
			n.Interrupted = w.interrupt([]turnMark{{s, started}}, "by its token budget")
		}
		w.tell(n)
	}
	st := m.TeamBudgets().State()
	if st == nil {
		return
	}
	warn, reached := w.crossed("", st)
	if !warn && !reached {
		return
	}
	n := BudgetNotice{Team: true, BudgetState: *st}
	if reached && m.cfg.Budgets.Interrupt {
		n.Interrupted = w.interrupt(running, "by the team's token budget")
	}
	w.tell(n)
}

// turnMark is a session's running turn: when it started.
type turnMark struct {
	s       *Session
	started time.Time
}

// budgetGrace is how long a turn that reached a budget has to end by
// itself before it is interrupted: an agent that reports its tokens with
// its answer (ACP) reports them as its turn ends.
const budgetGrace = 250 * time.Millisecond

// interrupt interrupts the turns of marks that are still running after
// budgetGrace (the same turns: a later one is not this budget's doing),
// all at once, and returns the identities whose turn it interrupted.
func (w *budgetWatch) interrupt(marks []turnMark, why string) []string {
	select {
	case <-time.After(budgetGrace):
	case <-w.m.ctx.Done():
		return nil
	}
	var mu sync.Mutex
	var out []string
	var wg sync.WaitGroup
	for _, t := range marks {
		t.s.mu.Lock()
		same := t.s.running != nil && t.s.turnStarted.Equal(t.started)
		t.s.mu.Unlock()
		if !same {
			continue
		}
		wg.Go(func() {
			if ok, _ := t.s.interrupt(w.m.ctx, why); ok {
				mu.Lock()
				out = append(out, t.s.Record().Identity)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Strings(out)
	return out
}

// crossed reports whether st has crossed 80 % (warn) or 100 % (reached)
// of a budget the lead was not told of yet, and marks it told.
func (w *budgetWatch) crossed(key string, st *BudgetState) (warn, reached bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st.Used >= st.Tokens && w.told100[key] != st.Tokens {
		w.told100[key], w.told80[key] = st.Tokens, st.Tokens // one notice says both
		return false, true
	}
	if st.Used*100 >= st.Tokens*80 && w.told80[key] != st.Tokens {
		w.told80[key] = st.Tokens
		return true, false
	}
	return false, false
}

// tell passes a notice on and audits it.
func (w *budgetWatch) tell(n BudgetNotice) {
	m := w.m
	who := "team " + m.cfg.Team
	if !n.Team {
		who = n.Identity
	}
	what := "80 % used"
	if n.Exceeded {
		what = "reached: no new turn starts"
	}
	m.log.Info("token budget "+what, "of", who, "used", n.Used, "budget", n.Tokens)
	m.cfg.Audit.Append(registry.Entry{Event: "budget", AgentID: n.AgentID, Identity: n.Identity,
		Summary: budgetLine(n.BudgetState), Outcome: what})
	if m.cfg.BudgetNotice != nil {
		m.cfg.BudgetNotice(n)
	}
}

// budgetLine is "8400 of 10000 tokens (84 %)".
func budgetLine(st BudgetState) string {
	return strconv.FormatInt(st.Used, 10) + " of " + strconv.FormatInt(st.Tokens, 10) + " tokens (" + strconv.Itoa(st.Percent) + " %)"
}

// Budget returns s's budget and how much of it is used; nil when it has
// none.
func (s *Session) Budget() *BudgetState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budgetLocked()
}

// budgetLocked is Budget; s.mu is held.
func (s *Session) budgetLocked() *BudgetState {
	budget, raised := s.rec.BudgetTokens, true
	if budget <= 0 {
		budget, raised = s.m.cfg.Budgets.forRole(s.rec.Role), false
	}
	var used int64
	if u := s.act.usage.total(); u != nil {
		used = u.TotalTokens
	}
	return budgetState(budget, used, raised)
}

// SetBudget sets s's token budget (codex-reply's budget_tokens; tokens >
// 0), kept in its record over a resume. Turns start again when it is
// above what s used, and the mail that waited is offered at once.
func (s *Session) SetBudget(tokens int64) *BudgetState {
	s.mu.Lock()
	s.rec.BudgetTokens = tokens
	rec := s.rec
	st := s.budgetLocked()
	s.mu.Unlock()
	s.m.persist.now(s)
	s.m.cfg.Audit.Session("budget_set", rec, budgetLine(*st))
	s.budgetRaised(rec.Identity)
	s.changed()
	return st
}

// budgetRaised offers identity's waiting mail (its session may take
// turns again) and has the watcher look.
func (s *Session) budgetRaised(identity string) {
	s.m.budgets.wake()
	if s.m.cfg.Mail != nil && s.Record().Status.Live() {
		s.m.cfg.Mail.Idle(identity)
	}
}

// overBudget returns BUDGET_EXCEEDED when a turn from src may not start on
// s: its own budget, or the team's, is used up. A summary is never held
// back. No lock of s is held.
func (s *Session) overBudget(src Source) error {
	if src == SourceSummary {
		return nil
	}
	s.mu.Lock()
	st := s.budgetLocked()
	rec := s.rec
	s.mu.Unlock()
	if st != nil && st.Exceeded {
		return proxyerr.New(proxyerr.ErrBudgetExceeded, map[string]any{"agent_id": rec.AgentID, "identity": rec.Identity, "scope": "session",
			"used_tokens": st.Used, "budget_tokens": st.Tokens},
			"%s has used %d of its %d-token budget: no new turn starts for it and its mail waits unread; "+
				"raise the budget with budget_tokens on codex-reply or agent_reply (above %d)", rec.Identity, st.Used, st.Tokens, st.Used)
	}
	if budget, _ := s.m.budgets.teamBudget(); budget <= 0 {
		return nil
	}
	if ts := s.m.TeamBudgets().State(); ts != nil && ts.Exceeded {
		return proxyerr.New(proxyerr.ErrBudgetExceeded, map[string]any{"agent_id": rec.AgentID, "identity": rec.Identity, "scope": "team",
			"team": s.m.cfg.Team, "used_tokens": ts.Used, "budget_tokens": ts.Tokens},
			"the team %s has used %d of its %d-token budget: no new turn starts for its agents and their mail waits unread; "+
				"raise the budget with team_budget_tokens on codex-reply or agent_reply (above %d)", s.m.cfg.Team, ts.Used, ts.Tokens, ts.Used)
	}
	return nil
}

// holdBudget is the check a turn makes as it starts (a turn queued before
// the budget was used up): it reports the refusal, or nil.
func (s *Session) holdBudget(t Turn) error {
	err := s.overBudget(t.Source)
	if err != nil {
		s.m.log.Info("turn not started: token budget used up", "agent_id", s.Record().AgentID, "source", t.Source, "err", err)
	}
	return err
}

func ptr[T any](v T) *T { return &v }
