package testlog

import (
	"fmt"
	"sync"
	"testing"
)

// Recorder is a testing.TB for a helper under test: it records the
// helper's cleanups and errors instead of acting on them, so the test can
// run the cleanups itself (RunCleanups) and look at what was reported
// (Errors). Everything else goes to the real TB.
type Recorder struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	errors   []string
}

// NewRecorder returns a Recorder over tb.
func NewRecorder(tb testing.TB) *Recorder { return &Recorder{TB: tb} }

// Helper does nothing: the helper's lines are not the test's.
func (r *Recorder) Helper() {}

// Cleanup records f for RunCleanups.
func (r *Recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// Errorf records an error.
func (r *Recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Failed says whether an error was recorded.
func (r *Recorder) Failed() bool { return len(r.Errors()) > 0 }

// Logf drops the helper's log.
func (r *Recorder) Logf(string, ...any) {}

// Errors returns the errors recorded so far.
func (r *Recorder) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

// RunCleanups runs the recorded cleanups, last first, as testing does.
func (r *Recorder) RunCleanups() {
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}
