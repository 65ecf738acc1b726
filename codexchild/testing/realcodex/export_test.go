package realcodex

import "time"

// SetLeakGrace sets the leak check's grace and returns a func restoring it.
func SetLeakGrace(d time.Duration) func() {
	old := waitGrace
	waitGrace = d
	return func() { waitGrace = old }
}

// HomesDirFor is homesDirFor: the folder for CODEX_HOMEs seen from wd with
// the user's home.
var HomesDirFor = homesDirFor
