package sshhost

// State reports whether the master connection is up, a channel that is
// closed at its next change (up, down, closed), and why the last attempt
// failed or the last connection ended (nil when none has): what a caller
// that follows the host (its agents' availability, mail that waits for
// it) watches. It never blocks.
func (h *Host) State() (up bool, changed <-chan struct{}, last *Error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up && !h.closed, h.changed, h.lastErr
}

// Err returns nil while the master connection is up, else the *Error
// that says why not: the last attempt's or the lost connection's (its Op,
// "connect" or "connection lost", wrapping ErrDown, with what ssh said
// last), or ErrClosed.
func (h *Host) Err() error {
	h.mu.Lock()
	last, up, closed := h.lastErr, h.up, h.closed
	h.mu.Unlock()
	if up || closed || last == nil {
		return h.ready("connect")
	}
	return h.err(last.Op, last.Stderr, down(last.Err))
}
