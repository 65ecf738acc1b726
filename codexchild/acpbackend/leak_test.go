package acpbackend

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// checkNoLeaks records the goroutines running now and, at cleanup (after
// the backends are closed: register it first), fails the test if a
// goroutine of the ACP backend, of its agents' clients, of a process
// supervisor or of os/exec is left. pids is unused here: the processes
// are looked for by their mark (noMarkedProcessLeft).
func checkNoLeaks(t testing.TB, _ func() []int) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			leaked := leakedGoroutines()
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("leak: %d goroutine(s) left after the test:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// leakedGoroutines returns the stacks of goroutines that run code of this
// package, of package acp's client, of childproc or of os/exec.
func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		s := string(g)
		if strings.Contains(s, "acpbackend.checkNoLeaks") || strings.Contains(s, "testing.tRunner") && !strings.Contains(s, "acpbackend.(*") {
			continue
		}
		if strings.Contains(s, "acpbackend.(*Backend)") || strings.Contains(s, "acpbackend.(*acpThread)") ||
			strings.Contains(s, "acpbackend.(*toolHTTP)") || strings.Contains(s, "acpbackend.(*toolBridge)") ||
			strings.Contains(s, "acp.(*Client)") || strings.Contains(s, "childproc.(*Process)") || strings.Contains(s, "os/exec.") {
			out = append(out, s)
		}
	}
	return out
}
