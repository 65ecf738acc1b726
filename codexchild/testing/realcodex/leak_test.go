//go:build linux

package realcodex_test

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

// cleanupTB collects cleanups and errors so a test can run a helper's
// cleanup itself and look at what it reported.
type cleanupTB struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (c *cleanupTB) Helper()          {}
func (c *cleanupTB) Cleanup(f func()) { c.cleanups = append(c.cleanups, f) }
func (c *cleanupTB) Errorf(format string, args ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, args...))
}
func (c *cleanupTB) Failed() bool                    { return len(c.errors) > 0 }
func (c *cleanupTB) Logf(format string, args ...any) {}
func (c *cleanupTB) runCleanups() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
}

func TestLeakCheck(t *testing.T) {
	defer realcodex.SetLeakGrace(300 * time.Millisecond)()
	fake := &cleanupTB{TB: t}
	h := realcodex.NewHome(fake, "http://127.0.0.1:1/v1", nil)

	// A process carrying the home's environment that nobody stops.
	cmd := exec.Command("sleep", "60")
	cmd.Env = h.Env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	// The new process shows once its exec is done (until then /proc has
	// the environment and command line of the forked test).
	want := fmt.Sprintf("%d: sleep 60", cmd.Process.Pid)
	var procs []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if procs = h.Processes(); len(procs) == 1 && strings.HasPrefix(procs[0], want) {
			break
		}
	}
	if len(procs) != 1 || !strings.HasPrefix(procs[0], want) {
		t.Errorf("Processes = %q", procs)
	}
	fake.runCleanups()
	if len(fake.errors) != 1 || !strings.Contains(fake.errors[0], "still alive") {
		t.Errorf("leak check reported %q", fake.errors)
	}
	select {
	case <-exited: // the leak check killed it
	case <-time.After(5 * time.Second):
		t.Error("the leaked process was not killed")
	}
}
