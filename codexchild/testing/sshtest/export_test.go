package sshtest

import "time"

// SetLeakGrace sets the leak check's grace and returns a func restoring it.
func SetLeakGrace(d time.Duration) func() {
	old := leakGrace
	leakGrace = d
	return func() { leakGrace = old }
}
