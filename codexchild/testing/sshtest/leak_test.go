//go:build linux

package sshtest_test

import (
	"fmt"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/testlog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// A command left running on the host fails the test at cleanup, which
// kills it.
func TestLeakCheck(t *testing.T) {
	defer sshtest.SetLeakGrace(300 * time.Millisecond)()
	fake := testlog.NewRecorder(t)
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
	fake.RunCleanups()
	if len(fake.Errors()) != 1 || !strings.Contains(fake.Errors()[0], "still running on the host") || !strings.Contains(fake.Errors()[0], pid+": sleep 301") {
		t.Errorf("leak check reported %q", fake.Errors())
	}
	poll.Until(t, "the leaked sleep to be killed", func() bool { return len(srv.Processes()) == 0 })
}
