package proxy

import (
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// checkNoLeaks records the goroutines running now and, at cleanup, waits
// until only those remain, failing with the stacks of the others: a
// server's Run must end everything it started (the connection's readers
// and pump, the sessions' goroutines, the persister, the mail bridge).
func checkNoLeaks(t *testing.T) {
	before := goroutines()
	t.Cleanup(func() {
		var extra []string
		deadline := time.Now().Add(5 * time.Second)
		for {
			extra = extra[:0]
			for id, stack := range goroutines() {
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
// the testing package's own.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(g, " [")
		if strings.Contains(g, "proxy.checkNoLeaks") || strings.Contains(g, "proxy.goroutines") ||
			strings.Contains(g, "testing.(*T).Run") || strings.Contains(g, "testing.tRunner") && !strings.Contains(g, "proxy.") ||
			strings.Contains(g, "testing.runTests") || strings.Contains(g, "os/signal") {
			continue
		}
		out[id] = g
	}
	return out
}
