package sshhost_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/google/go-cmp/cmp"
)

// TestLauncher: each command the launcher starts is a session of the
// instance of its own (prefix-1, prefix-2), with its pid file on the host
// while it runs; the environment the caller added crosses, this
// machine's does not; its directory is the host's.
func TestLauncher(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{Instance: "lead"})
	t.Setenv("SSHHOST_LOCAL_ONLY", "this machine's")
	var outs []string
	for range 2 {
		p, err := childproc.Start(childproc.Config{
			Name: "test agent",
			Spec: childproc.Spec{Path: "sh", Args: []string{"-c", `echo "$ADDED ${SSHHOST_LOCAL_ONLY:-unset} $(pwd) $(ls "$HOME/.atm-agent-mcp/run/lead")"`},
				Env: append(os.Environ(), "ADDED=added"), AddEnv: []string{"ADDED=added"}, Dir: srv.Home},
			Launch: h.Launcher("claude"),
			Logger: logger(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p.Stdout())
		p.StdoutDone()
		<-p.Done()
		outs = append(outs, strings.TrimSpace(string(b)))
	}
	want := []string{"added unset " + srv.Home + " claude-1.pid", "added unset " + srv.Home + " claude-2.pid"}
	if diff := cmp.Diff(want, outs); diff != "" {
		t.Errorf("what the agents said (-want +got):\n%s", diff)
	}

	noInstance := hostFor(t, srv, sshhost.Config{Name: "other"})
	_, err := childproc.Start(childproc.Config{Spec: childproc.Spec{Path: "true"}, Launch: noInstance.Launcher("claude")})
	if err == nil || !strings.Contains(err.Error(), "no Config.Instance") {
		t.Errorf("a launch without an instance: %v, want an error saying so", err)
	}
}

// TestState: State follows the connection: up, then down with what ssh
// said once the server drops it (the change channel closed), then up
// again; Err says the same.
func TestState(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{})
	up, changed, _ := h.State()
	if !up || h.Err() != nil {
		t.Fatalf("State after Up = %v, Err %v; want up", up, h.Err())
	}
	srv.Stop()
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no change after the server went")
	}
	poll.Until(t, "the host down with what ssh said", func() bool {
		up, _, last := h.State()
		return !up && last != nil && strings.Contains(last.Error(), `host "box"`)
	})
	if err := h.Err(); !errors.Is(err, sshhost.ErrDown) {
		t.Errorf("Err while down = %v, want ErrDown", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := h.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if up, _, _ := h.State(); !up || h.Err() != nil {
		t.Errorf("State after the reconnect = %v, Err %v; want up", up, h.Err())
	}
}

// TestLongTempDir: a $TMPDIR too long for a control socket's path makes
// the socket's directory under /tmp instead, and the host connects.
func TestLongTempDir(t *testing.T) {
	srv := startServer(t)
	long := t.TempDir() + "/" + strings.Repeat("d", 90)
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	h := hostFor(t, srv, sshhost.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := h.Up(ctx); err != nil {
		t.Fatalf("Up with a long TMPDIR: %v", err)
	}
}
