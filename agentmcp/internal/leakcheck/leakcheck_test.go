package leakcheck

import (
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps its errors and cleanups.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Cleanup(f func())               { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, a ...any) { r.errs = append(r.errs, format) }

func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestCheck(t *testing.T) {
	t.Run("a goroutine that ends", func(t *testing.T) {
		r := &recorder{TB: t}
		Check(r, "leakcheck.")
		done := make(chan struct{})
		go func() { <-done }()
		close(done)
		r.end()
		if len(r.errs) > 0 {
			t.Errorf("reported a goroutine that ended: %v", r.errs)
		}
	})
	t.Run("a goroutine left running", func(t *testing.T) {
		r := &recorder{TB: t}
		Check(r, "leakcheck.")
		stop := make(chan struct{})
		go parked(stop)
		r.end()
		close(stop)
		if len(r.errs) != 1 || !strings.Contains(r.errs[0], "leaked") {
			t.Errorf("errors %v, want one leak", r.errs)
		}
	})
}

// parked waits for stop: a goroutine of the code under test.
func parked(stop chan struct{}) { <-stop }
