// Package leakcheck is the goroutine-leak check of the proxy's test
// harnesses: a test records the goroutines running when it starts, and at
// its end waits until only those remain, failing with the stacks of the
// others. It is imported by tests only.
package leakcheck

import (
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// Check records the goroutines running now and registers a cleanup that
// waits (up to 5 s) until only those remain, failing t with the stacks of
// the others. pkg is the package under test as it appears in stacks (for
// example "mcpconn."): a test goroutine of the testing package counts only
// while it runs that package's code.
func Check(t testing.TB, pkg string) {
	before := goroutines(pkg)
	t.Cleanup(func() {
		var extra []string
		deadline := time.Now().Add(5 * time.Second)
		for {
			extra = extra[:0]
			for id, stack := range goroutines(pkg) {
				if _, ok := before[id]; !ok {
					extra = append(extra, stack)
				}
			}
			if len(extra) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			t.Errorf("%d goroutine(s) leaked:\n%s", len(extra), strings.Join(extra, "\n\n"))
		}
	})
}

// goroutines returns the stacks of the running goroutines by id, without
// the testing package's own and this package's.
func goroutines(pkg string) map[string]string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(g, " [")
		if strings.Contains(g, "leakcheck.Check") || strings.Contains(g, "leakcheck.goroutines") ||
			strings.Contains(g, "testing.(*T).Run") || strings.Contains(g, "testing.(*B)") ||
			strings.Contains(g, "testing.tRunner") && !strings.Contains(g, pkg) ||
			strings.Contains(g, "testing.runTests") || strings.Contains(g, "os/signal") {
			continue
		}
		out[id] = g
	}
	return out
}
