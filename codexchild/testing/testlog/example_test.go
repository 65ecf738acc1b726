package testlog_test

import (
	"fmt"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/testlog"
)

// A helper that reports a leak at cleanup, checked by running its cleanup.
func ExampleRecorder() {
	t := &testing.T{} // in a test: the test's own t
	rec := testlog.NewRecorder(t)
	rec.Cleanup(func() { rec.Errorf("leak: %d process left", 1) })
	rec.RunCleanups()
	fmt.Println(rec.Errors(), rec.Failed())
	// Output: [leak: 1 process left] true
}
