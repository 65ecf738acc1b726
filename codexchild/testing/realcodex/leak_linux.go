//go:build linux

package realcodex

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Processes returns the live processes (not zombies) whose environment has
// CODEX_HOME or [TagEnv] equal to the home's directory, as "pid: cmdline".
func (h *Home) Processes() []string {
	return findTagged(h.Dir, os.Getpid())
}

func findTagged(dir string, self int) []string {
	marks := [][]byte{[]byte("CODEX_HOME=" + dir), []byte(TagEnv + "=" + dir)}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		base := filepath.Join("/proc", e.Name())
		env, err := os.ReadFile(filepath.Join(base, "environ"))
		if err != nil || len(env) == 0 {
			continue // gone, not ours, or a zombie
		}
		tagged := false
		for _, kv := range bytes.Split(env, []byte{0}) {
			for _, m := range marks {
				if bytes.Equal(kv, m) {
					tagged = true
				}
			}
		}
		if !tagged {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(base, "cmdline"))
		found = append(found, fmt.Sprintf("%d: %s", pid, strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))))
	}
	return found
}

// checkLeaks fails the test if a process started for the home outlives it
// (after a grace), and kills such processes by pid.
func checkLeaks(t testing.TB, h *Home) {
	deadline := time.Now().Add(waitGrace)
	for {
		procs := h.Processes()
		if len(procs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("realcodex: %d process(es) of CODEX_HOME %s still alive %s after the test; killing them:\n%s",
				len(procs), h.Dir, waitGrace, strings.Join(procs, "\n"))
			for _, p := range procs {
				pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
