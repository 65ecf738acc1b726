package backend

// RecoveryError is a failure of a child that runs every thread of its
// backend (a WholeRestarter: the Codex child) together with what brings it
// back, as the supervisor that restarts the child knows it at that moment:
// serve's, which can restart the child, refuses restarts in a crash loop,
// or is shutting down. The error that reaches the client ends its message
// with Advice and adds Data, so that no error advises an action that will
// be refused. Without one, the advice is to restart the MCP server, which
// is always possible.
type RecoveryError struct {
	// Err is the backend's error: an *ExitError, or one wrapping
	// ErrHandshake. required.
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
