package poll

import (
	"testing"
	"time"
)

// Timeout is how long Until waits before it fails the test.
const Timeout = 30 * time.Second

// Until polls cond until it holds, every millisecond at first and then
// less often (up to every 20 ms), and fails the test (t.Fatalf, naming
// what it waited for) when it has not held within Timeout. Call it from
// the test's goroutine.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !until(Timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", Timeout, what)
	}
}

// until polls cond until it holds (true) or within passes (false).
func until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
	return true
}
