//go:build linux

package realcodex_test

import (
	"fmt"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/testlog"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
)

func TestLeakCheck(t *testing.T) {
	defer realcodex.SetLeakGrace(300 * time.Millisecond)()
	fake := testlog.NewRecorder(t)
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
	fake.RunCleanups()
	if len(fake.Errors()) != 1 || !strings.Contains(fake.Errors()[0], "still alive") {
		t.Errorf("leak check reported %q", fake.Errors())
	}
	select {
	case <-exited: // the leak check killed it
	case <-time.After(5 * time.Second):
		t.Error("the leaked process was not killed")
	}
}
