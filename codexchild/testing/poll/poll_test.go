package poll

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestUntil: a condition another goroutine makes true is seen soon after;
// one that never holds gives up once its time has passed, after a few
// dozen looks, not thousands.
func TestUntil(t *testing.T) {
	var ready atomic.Bool
	time.AfterFunc(20*time.Millisecond, func() { ready.Store(true) })
	start := time.Now()
	Until(t, "the flag", ready.Load)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("saw the flag after %v", d)
	}
	var looks int
	if until(100*time.Millisecond, func() bool { looks++; return false }) {
		t.Fatal("a condition that never holds held")
	}
	if looks < 3 || looks > 50 {
		t.Errorf("%d looks in 100 ms, want a few (backing off to 20 ms)", looks)
	}
}
