//go:build linux

package sshtest_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// cleanupTB collects cleanups and errors so a test can run the server's
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

// A command left running on the host fails the test at cleanup, which
// kills it.
func TestLeakCheck(t *testing.T) {
	defer sshtest.SetLeakGrace(300 * time.Millisecond)()
	fake := &cleanupTB{TB: t}
	srv := sshtest.Start(fake, nil)
	// nohup-like: the command outlives its session.
	out, err := exec.Command(sshtest.SSH, append(srv.SSHArgs(), srv.Alias, "sleep 301 </dev/null >/dev/null 2>&1 & echo $!")...).Output()
	if err != nil {
		t.Fatalf("ssh: %v", err)
	}
	pid := strings.TrimSpace(string(out))
	found := false
	for _, p := range srv.Processes() {
		found = found || fmt.Sprint(p.PID) == pid && p.Cmdline == "sleep 301"
	}
	if !found {
		t.Fatalf("Processes = %v, want pid %s: sleep 301", srv.Processes(), pid)
	}
	fake.runCleanups()
	if len(fake.errors) != 1 || !strings.Contains(fake.errors[0], "still running on the host") || !strings.Contains(fake.errors[0], pid+": sleep 301") {
		t.Errorf("leak check reported %q", fake.errors)
	}
	poll.Until(t, "the leaked sleep to be killed", func() bool { return len(srv.Processes()) == 0 })
}
