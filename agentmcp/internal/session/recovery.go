package session

import "github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"

// An agent can be down for a while: a child that runs every session of
// its kind (the Codex child) in manual restart mode, in a crash loop, or
// while serve shuts down. Its backend tells so (backend.Availability):
// Manager.Create, every turn a client asks for (Session.submit:
// codex-reply, codex with agent_id, agent_reply, background and task
// turns) and AnonymousReply ask it first and refuse at once with its
// error, before anything is created, queued, written or audited, so that
// a client retrying in a loop writes nothing each time. A failure of such
// a child carries its supervisor's advice (a *backend.RecoveryError;
// BackendError ends its message with it), so that no error advises an
// action the supervisor will refuse.

// MailPaused reports whether mail to this session must wait because its
// own agent is down and will not come back by itself
// (backend.MailPauser). Only the session's own backend is asked: another
// kind's crash never holds this session's mail. False for a backend that
// cannot tell.
func (s *Session) MailPaused() bool {
	b, err := s.m.cat.of(s.Record())
	if err != nil {
		return false
	}
	return backend.MailPaused(b)
}
