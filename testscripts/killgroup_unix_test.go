//go:build unix

package testscripts

import (
	"strconv"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdKillGroup is the scenario command "killgroup PID": SIGKILL to the
// process group PID leads (the Codex child started through its guard), as
// a crash or the OOM killer would end it.
func cmdKillGroup(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: killgroup PID")
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid <= 1 {
		ts.Fatalf("killgroup: bad pid %q", args[0])
	}
	ts.Check(syscall.Kill(-pid, syscall.SIGKILL))
}
