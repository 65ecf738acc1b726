package session

import (
	"strings"
)

// AfterRestart tells every live session on b, a backend whose one child
// runs every session (backend.WholeRestarter), that its child was replaced
// (for the Codex child: agent_restart_codex, or codex_restart on_demand)
// and returns how many continue; sessions on other backends run elsewhere
// and are left alone. Nothing runs now: a session's next turn goes to the
// new child, which continues the session's thread where it can (Codex
// app-server resumes it, with its per-thread tools configured again: its
// history is intact). Where it cannot (Codex mcp-server), the turn opens a
// new thread with the note given here of what the agent said in the
// session before (its saved summary when there is one) — as --resume does.
// Each continuation is audited.
func (m *Manager) AfterRestart(b Backend) int {
	n := 0
	for _, s := range m.Live() {
		rec := s.Record()
		if rec.BackendID == "" {
			continue
		}
		if own, err := m.cat.of(rec); err != nil || own != b {
			continue
		}
		note, what := restartNote(m, s)
		s.mu.Lock()
		if note != "" {
			s.seed, s.seedWhat = note, what
		}
		s.mu.Unlock()
		m.cfg.Audit.Session("session_continues_after_restart", rec, "next turn on the new "+m.cat.Name(rec.Kind())+" child")
		n++
	}
	return n
}

// restartNote is what a session's fresh thread (mcp-server) starts with:
// its saved summary, else its last agent messages; what names it.
func restartNote(m *Manager, s *Session) (note, what string) {
	rec := s.Record()
	var b strings.Builder
	b.WriteString("[The " + m.cat.Name(rec.Kind()) + " process this session ran in stopped and was restarted; this is a new thread of the same session (agent_id " + rec.AgentID + ").")
	if m.cfg.Registry.HasSummary(rec.Identity, rec.BackendID) {
		if sum, err := m.cfg.Registry.ReadSummary(rec.Identity, rec.BackendID); err == nil && strings.TrimSpace(sum) != "" {
			b.WriteString(" Your summary of the session so far:]\n" + strings.TrimSpace(sum))
			return b.String(), "its saved summary"
		}
	}
	s.mu.Lock()
	msgs := append([]string(nil), s.act.messages...)
	s.mu.Unlock()
	if len(msgs) > 5 {
		msgs = msgs[len(msgs)-5:]
	}
	if len(msgs) == 0 {
		b.WriteString("]")
		return b.String(), ""
	}
	b.WriteString(" What you said in it last:]")
	for _, msg := range msgs {
		b.WriteString("\n- " + Clip(msg, 600))
	}
	return b.String(), "its last messages"
}
