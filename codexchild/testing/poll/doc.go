// Package poll is the tests' one way to wait for a condition that
// another goroutine or process makes true: Until polls it, more slowly
// the longer it waits, and fails the test when it has not held within a
// hang guard's time. It is test support, in codexchild's test wing, so that
// the modules whose tests use the wing already (codexchild, agentmcp,
// testscripts) share it; mailbridge, which does not depend on codexchild,
// keeps its own.
//
// A wait is no timing assertion: the guard is long (Timeout) so that a
// loaded machine does not fail a test that would pass, and a speed target
// belongs in a benchmark. Where time itself is what a test checks (a
// debounce, a timeout), testing/synctest's fake clock is the tool, not a
// poll.
package poll
