package session

import (
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// A session's token usage is kept in its registry record
// (registry.Session.Usage), so that it counts over the session's life in
// every serve that runs it: a resume in a later serve starts from what the
// earlier ones counted, and a team's total can add up sessions that are
// closed or run by other serves. The record is written with the
// persister's debounce after each report (usageChanged), and in the final
// record of a close.

// seed makes u count on from a session's saved usage: what its threads
// reported before this process, with the part of its last thread kept
// apart, so that the thread's totals heard again (Codex keeps them with a
// resumed thread) replace that part instead of adding to it, and a new
// count (a new thread, or a process that counts from 0) adds to it.
func (u *usageTotals) seed(saved *registry.Usage) {
	if saved == nil {
		return
	}
	total := usageOf(saved.Tokens)
	if saved.Last == nil || saved.Thread == "" {
		u.done, u.seen = total, true
		return
	}
	last := usageOf(*saved.Last)
	u.done = minus(total, last)
	u.thread, u.cur, u.seen = saved.Thread, last, true
}

// saved is u as the registry keeps it; nil before any report.
func (u *usageTotals) saved() *registry.Usage {
	t := u.total()
	if t == nil {
		return nil
	}
	r := &registry.Usage{Tokens: tokensOf(*t)}
	if u.thread != "" {
		last := tokensOf(u.cur)
		r.Thread, r.Last = u.thread, &last
	}
	return r
}

// usageOf converts the registry's tokens to the one shape of every kind.
func usageOf(t registry.Tokens) backend.Usage {
	u := backend.Usage{InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens, OutputTokens: t.OutputTokens, TotalTokens: t.TotalTokens}
	if t.Cost != nil {
		u.Cost = &backend.Cost{Amount: t.Cost.Amount, Currency: t.Cost.Currency}
	}
	return u
}

// tokensOf converts a usage to the registry's tokens (the context fill is
// not kept: it says how full the model's context is now).
func tokensOf(u backend.Usage) registry.Tokens {
	t := registry.Tokens{InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	if u.Cost != nil {
		t.Cost = &registry.Cost{Amount: u.Cost.Amount, Currency: u.Cost.Currency}
	}
	return t
}

// minus is a minus b, counts never below 0; the cost too when both are in
// one currency (else a's).
func minus(a, b backend.Usage) backend.Usage {
	sub := func(x, y int64) int64 { return max(x-y, 0) }
	r := backend.Usage{InputTokens: sub(a.InputTokens, b.InputTokens), CachedInputTokens: sub(a.CachedInputTokens, b.CachedInputTokens),
		OutputTokens: sub(a.OutputTokens, b.OutputTokens), TotalTokens: sub(a.TotalTokens, b.TotalTokens)}
	if a.Cost != nil {
		c := *a.Cost
		if b.Cost != nil && b.Cost.Currency == c.Currency {
			c.Amount = max(c.Amount-b.Cost.Amount, 0)
		}
		if c.Amount > 0 {
			r.Cost = &c
		}
	}
	return r
}

// usageChanged keeps a new report of s's usage (or its model) in its
// record and has it written; it wakes the budget watcher when a budget can
// be crossed (budgetWatched). It runs on the backend's reader with
// no lock held and does not wait.
func (s *Session) usageChanged() {
	s.mu.Lock()
	s.rec.Usage = s.act.usage.saved()
	s.rec.Model = firstNonEmpty(s.modelLocked(), s.rec.Model)
	s.mu.Unlock()
	s.m.persist.async(s)
	if s.budgetWatched() {
		s.m.budgets.wake()
	}
}

// keepUsageLocked puts what s counted into rec, a record of s read back
// from the registry (the file may be a debounce behind); s.mu is held.
func (s *Session) keepUsageLocked(rec *registry.Session) {
	if u := s.act.usage.saved(); u != nil {
		rec.Usage = u
	}
	rec.Model = firstNonEmpty(s.modelLocked(), rec.Model)
}
