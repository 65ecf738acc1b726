package session

// RecoveryError is a failure of the Codex child together with what brings
// Codex back, as the backend that supervises the child knows it at that
// moment: the proxy's, which can restart the child, refuses restarts in a
// crash loop, or is shutting down. BackendError ends its message with
// Advice and adds Data, so that no error advises an action that will be
// refused. Without one, BackendError advises restarting the MCP server,
// which is always possible.
type RecoveryError struct {
	// Err is the backend's error: a *codexchild.ExitError, or one wrapping
	// codexchild.ErrHandshake. required.
	Err error
	// Advice says what to do, as a clause that completes "… (ADVICE)":
	// "call agent_restart_codex to start a new one: the sessions continue
	// on it". required.
	Advice string
	// Data are added to the JSON-RPC error's data (restart_refused_until,
	// crashes …). optional.
	Data map[string]any
}

func (e *RecoveryError) Error() string { return e.Err.Error() + " (" + e.Advice + ")" }

// Unwrap returns Err.
func (e *RecoveryError) Unwrap() error { return e.Err }

// availability is what Manager.Create, every turn a client asks for
// (Session.submit: codex-reply, codex with agent_id, background and task
// turns) and AnonymousReply ask of a backend that can be down for a while
// (the proxy's restartable child), if it has it: nil when a turn can run
// now (or the turn itself restarts Codex, or waits for a restart in
// progress), else the error that says why not and how to get Codex back.
// Nothing is created, queued or run while Codex is down: a client retrying
// in a loop must not write the registry and the audit log each time.
type availability interface {
	Unavailable() error
}

// unavailable asks a backend whether its agent is down (availability); nil
// for a backend that cannot tell (every backend but the proxy's Codex
// child, today) or none.
func unavailable(b Backend) error {
	if a, ok := b.(availability); ok {
		return a.Unavailable()
	}
	return nil
}

// mailPauser is what the mail delivery asks of a session's backend that
// can be down for a while and come back (the proxy's restartable Codex
// child): whether mail to its sessions must wait, unread, until it is back
// (its restart, or the next turn, starts it again).
type mailPauser interface {
	MailPaused() bool
}

// MailPaused reports whether mail to this session must wait because its
// own agent is down and will not come back by itself (mailPauser). Only
// the session's own backend is asked: another kind's crash never holds
// this session's mail. False for a backend that cannot tell.
func (s *Session) MailPaused() bool {
	b, err := s.m.backendOf(s.Record())
	if err != nil {
		return false
	}
	if p, ok := b.(mailPauser); ok {
		return p.MailPaused()
	}
	return false
}
