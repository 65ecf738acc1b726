package sshtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
	"github.com/google/go-cmp/cmp"
)

func ssh(t *testing.T, srv *sshtest.Server, command string) (string, error) {
	t.Helper()
	out, err := exec.Command(sshtest.SSH, append(srv.SSHArgs(), srv.Alias, command)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// A session sees the second home as its HOME, the test's directories
// first on its PATH, the extra variables, and the tag.
func TestSessionEnvironment(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "hello-on-host"), []byte("#!/bin/sh\necho hello from the host\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, &sshtest.Options{Path: []string{bin}, Env: []string{"GREETING=hi there"}})
	got, err := ssh(t, srv, `printf '%s\n' "$HOME" "$PATH" "$GREETING" "$`+sshtest.TagEnv+`"; hello-on-host`)
	if err != nil {
		t.Fatalf("ssh: %v: %s", err, got)
	}
	want := strings.Join([]string{srv.Home, bin + ":/usr/bin:/bin", "hi there", srv.Dir, "hello from the host"}, "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("session (-want +got):\n%s", diff)
	}
}

// A connection dropped by the server leaves its command running, as a
// network drop does; Processes finds it; Stop and Restart take the host
// away and bring it back on the same port.
func TestFaults(t *testing.T) {
	srv := sshtest.Start(t, nil)
	cmd := exec.Command(sshtest.SSH, append(srv.SSHArgs(), srv.Alias, "sleep 300")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the session's sleep", func() bool { return hasProc(srv, "sleep 300") })
	srv.DropConnections()
	if err := cmd.Wait(); err == nil {
		t.Errorf("ssh exited 0 after its connection was dropped; want an error")
	}
	if !hasProc(srv, "sleep 300") {
		t.Errorf("the session's command died with its connection; want it alive (orphaned), as on a real host")
	}
	for _, p := range srv.Processes() {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	poll.Until(t, "the orphan to be gone", func() bool { return len(srv.Processes()) == 0 })

	port := srv.Port
	srv.Stop()
	if out, err := ssh(t, srv, "true"); err == nil {
		t.Errorf("ssh to a stopped server succeeded: %s", out)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.Port != port {
		t.Errorf("port after Restart = %d, want %d", srv.Port, port)
	}
	if out, err := ssh(t, srv, "echo back"); err != nil || out != "back" {
		t.Errorf("ssh after Restart = %q, %v; want back", out, err)
	}
}

func hasProc(srv *sshtest.Server, cmdline string) bool {
	for _, p := range srv.Processes() {
		if p.Cmdline == cmdline {
			return true
		}
	}
	return false
}
