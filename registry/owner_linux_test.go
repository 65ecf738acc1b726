package registry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOwnerZombie: a killed proxy its parent has not reaped yet still
// answers signal 0, but holds nothing: it is not running.
func TestOwnerZombie(t *testing.T) {
	home := testHome(t)
	c := startChild(t, "serve", "ATM_HOME="+home, "CHILD_TEAM=team", "CHILD_IDENTITY=lead",
		"CHILD_AGENT=codex-live", "CHILD_SESSION=arch")
	c.expectPrefix("ready")
	pid := c.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stat := filepath.Join("/proc", strconv.Itoa(pid), "stat")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(stat)
		if dead(b) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d is no zombie after 10s: %q", pid, b)
		}
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("signal 0 to the zombie: %v (the case this test is about is gone)", err)
	}
	d, _ := TeamDir(home, "team")
	if h, running := d.Owner("lead"); running || h.PID != pid {
		t.Errorf("Owner of a zombie = %+v, %v; want pid %d, not running", h, running, pid)
	}
	c.kill() // reaps it
}

// TestOwnerReusedPID: a holder file left by a dead proxy whose pid now
// belongs to a process that does not hold the claim (here, this test's
// own) is not a running owner.
func TestOwnerReusedPID(t *testing.T) {
	d, err := TeamDir(t.TempDir(), "team")
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Claim("lead", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, running := d.Owner("lead"); !running {
		t.Fatal("a claim this process holds: not running")
	}
	c.Release()
	// What a SIGKILLed holder leaves: the lock file and its holder file.
	info, _ := json.Marshal(holderInfo{PID: os.Getpid(), Since: time.Now()})
	holder := strings.TrimSuffix(d.lockPath("lead"), ".lock") + ".holder"
	if err := os.WriteFile(holder, info, 0o600); err != nil {
		t.Fatal(err)
	}
	if h, running := d.Owner("lead"); running || h.PID != os.Getpid() {
		t.Errorf("Owner = %+v, %v; want pid %d, not running", h, running, os.Getpid())
	}
	if h, running := d.Owner("nobody"); running || h != (Holder{}) {
		t.Errorf("Owner of an identity never claimed = %+v, %v", h, running)
	}
}

// TestDead parses /proc/{pid}/stat states, with a command name that holds
// parentheses and spaces.
func TestDead(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want bool
	}{
		{"42 (serve) S 1 42 42", false},
		{"42 (serve) R 1 42 42", false},
		{"42 (serve) Z 1 42 42", true},
		{"42 (serve) X 1 42 42", true},
		{"42 (a (b) c) Z 1", true},
		{"42 (a) Z) S 1", false},
		{"", false},
		{"42 (serve)", false},
	} {
		if got := dead([]byte(tc.stat)); got != tc.want {
			t.Errorf("dead(%q) = %v, want %v", tc.stat, got, tc.want)
		}
	}
}
