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
// that says why not (wrapping ErrDown, with what ssh said last, or
// ErrClosed), as a command started now would fail.
func (h *Host) Err() error { return h.ready("connect") }
