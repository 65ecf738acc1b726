package sshhost_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
	"github.com/google/go-cmp/cmp"
)

// onHost reports whether a process with exactly cmdline runs on srv's
// host, and its pid.
func onHost(srv *sshtest.Server, cmdline string) (int, bool) {
	for _, p := range srv.Processes() {
		if p.Cmdline == cmdline {
			return p.PID, true
		}
	}
	return 0, false
}

// TestReap: Reap stops an instance's agents on the host, one that ignores
// SIGTERM too, and leaves another instance's and a process whose pid a
// stale pid file names alone; Instances lists the instances with pid
// files there, before and after.
func TestReap(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{})
	lead1 := sshhost.Tag{Instance: "lead", Session: "s1"}
	lead2 := sshhost.Tag{Instance: "lead", Session: "s2"}
	other := sshhost.Tag{Instance: "other", Session: "s3"}
	p1, _ := agent(t, h, lead1, "", nil, "sleep", "300")
	p2, _ := agent(t, h, lead2, "", nil, "sh", "-c", `trap "" TERM; sleep 301`)
	p3, _ := agent(t, h, other, "", nil, "sleep", "302")
	for _, cmd := range []string{"sleep 300", "sleep 301", "sleep 302"} {
		poll.Until(t, cmd+" on the host", func() bool { _, ok := onHost(srv, cmd); return ok })
	}
	for _, tag := range []sshhost.Tag{lead1, lead2, other} {
		poll.Until(t, "the pid file of "+tag.Session, func() bool { _, err := os.Stat(pidFile(srv.Home, tag)); return err == nil })
	}
	// A stale pid file of lead's that names other's process.
	pid302, _ := onHost(srv, "sleep 302")
	stale := sshhost.Tag{Instance: "lead", Session: "stale"}
	if err := os.WriteFile(pidFile(srv.Home, stale), []byte(strconv.Itoa(pid302)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	if got, err := h.Instances(t.Context()); err != nil || !slices.Equal(got, []string{"lead", "other"}) {
		t.Errorf("Instances before the reap = %q, %v; want lead and other", got, err)
	}
	stopped, err := h.Reap(t.Context(), "lead")
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	slices.Sort(stopped)
	if diff := cmp.Diff([]string{"s1", "s2"}, stopped); diff != "" {
		t.Errorf("stopped (-want +got):\n%s", diff)
	}
	for _, p := range []interface{ Done() <-chan struct{} }{p1, p2} {
		<-p.Done() // the wrapper ended, so its ssh did
	}
	for _, cmd := range []string{"sleep 300", "sleep 301"} {
		poll.Until(t, cmd+" to be gone from the host", func() bool { _, ok := onHost(srv, cmd); return !ok })
	}
	if _, ok := onHost(srv, "sleep 302"); !ok {
		t.Fatal("the other instance's agent was stopped too")
	}
	for _, tag := range []sshhost.Tag{lead1, lead2, stale} {
		if _, err := os.Stat(pidFile(srv.Home, tag)); !os.IsNotExist(err) {
			t.Errorf("pid file of %s: %v, want it removed", tag.Session, err)
		}
	}
	if stopped, err := h.Reap(t.Context(), "lead"); err != nil || len(stopped) != 0 {
		t.Errorf("second Reap = %v, %v; want nothing to stop", stopped, err)
	}
	if got, err := h.Instances(t.Context()); err != nil || !slices.Equal(got, []string{"other"}) {
		t.Errorf("Instances after the reap = %q, %v; want other", got, err)
	}
	if stopped, err := h.Reap(t.Context(), "other"); err != nil || !slices.Equal(stopped, []string{"s3"}) {
		t.Errorf("Reap of other = %v, %v; want [s3]", stopped, err)
	}
	<-p3.Done()
	if _, err := h.Reap(t.Context(), "../x"); err == nil || !strings.Contains(err.Error(), "instance") {
		t.Errorf("Reap of a bad instance = %v", err)
	}
}
