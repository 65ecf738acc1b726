package childproc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// TestNoOrphan: a process the child started, which ignores SIGTERM and
// its stdin's end, does not outlive the child, whether the child is
// stopped, killed, or dies by itself (its group is killed once the leader
// has exited).
func TestNoOrphan(t *testing.T) {
	for _, end := range []string{"stop", "kill", "leader dies"} {
		t.Run(end, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			p, _ := start(t, helperConfig(t, "stubborn", pidfile))
			var pid int
			deadline := time.Now().Add(10 * time.Second)
			for pid == 0 {
				b, _ := os.ReadFile(pidfile)
				pid, _ = strconv.Atoi(string(b))
				if time.Now().After(deadline) {
					t.Fatal("the grandchild never started")
				}
				time.Sleep(10 * time.Millisecond)
			}
			switch end {
			case "stop":
				_ = p.Stop(context.Background())
			case "kill":
				p.Kill(Because("a test kills it"))
			case "leader dies":
				if err := p.cmd.Process.Kill(); err != nil { // the leader alone
					t.Fatal(err)
				}
			}
			waitDone(t, p, 10*time.Second)
			deadline = time.Now().Add(5 * time.Second)
			for running(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the grandchild %d outlived the child (%s)", pid, end)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
