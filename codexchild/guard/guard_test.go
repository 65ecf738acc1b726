package guard

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestMain runs the test binary as the guard when asked to (the guard ends
// its process, so it cannot run inside the test).
func TestMain(m *testing.M) {
	if os.Getenv("GUARD_TEST_MAIN") == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// guarded runs the guard over sh -c script and returns how it ended.
func guarded(t *testing.T, script string) *os.ProcessState {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "sh", "-c", script)
	cmd.Env = append(os.Environ(), "GUARD_TEST_MAIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState
}

// TestExitsAsTheChild: the guard's exit is the child's, code or signal, so
// the proxy sees Codex's own exit status; SIGTERM to the group reaches the
// child and the guard waits for it.
func TestExitsAsTheChild(t *testing.T) {
	tests := []struct {
		name, script string
		code         int
		signal       syscall.Signal
	}{
		{"success", "exit 0", 0, 0},
		{"exit code", "exit 7", 7, 0},
		{"killed", "kill -KILL $$", -1, syscall.SIGKILL},
		{"SIGTERM to the group: the child handles it, the guard waits", "trap 'exit 3' TERM; kill -TERM 0; sleep 5 & wait", 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := guarded(t, tt.script)
			ws := st.Sys().(syscall.WaitStatus)
			if tt.signal != 0 {
				if !ws.Signaled() || ws.Signal() != tt.signal {
					t.Errorf("status %v, want killed by %v", st, tt.signal)
				}
				return
			}
			if ws.Signaled() || st.ExitCode() != tt.code {
				t.Errorf("status %v, want exit code %d", st, tt.code)
			}
		})
	}
}

func TestNoCommand(t *testing.T) {
	if got := Main(nil); got != 2 {
		t.Errorf("Main(nil) = %d, want 2", got)
	}
}
