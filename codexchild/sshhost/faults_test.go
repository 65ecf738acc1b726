package sshhost_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
)

// TestReconnectReaps: when the connection drops, the agent over it fails
// at once; its command lives on on the host until the Host has connected
// again, which stops it (Config.Instance) before Up returns.
func TestReconnectReaps(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{Instance: "lead"})
	tag := sshhost.Tag{Instance: "lead", Session: "s1"}
	p, _ := agent(t, h, tag, "", nil, "sh", "-c", `trap "" HUP; sleep 303`)
	poll.Until(t, "the agent on the host", func() bool { _, ok := onHost(srv, "sleep 303"); return ok })
	poll.Until(t, "its pid file", func() bool { _, err := os.Stat(pidFile(srv.Home, tag)); return err == nil })

	srv.DropConnections()
	if ee := waitEnd(t, p); ee.Status.Code != 255 {
		t.Errorf("the agent's ssh after the drop: %v (stderr %q), want code 255", ee.Status, ee.Stderr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	poll.Until(t, "the Host to see the drop", func() bool { _, err := h.Run(ctx, "", []string{"true"}); return errors.Is(err, sshhost.ErrDown) })
	if err := h.Up(ctx); err != nil {
		t.Fatalf("Up after the drop: %v", err)
	}
	if _, ok := onHost(srv, "sleep 303"); ok {
		t.Errorf("the agent left by the drop still runs on the host after the reconnect")
	}
	if _, err := os.Stat(pidFile(srv.Home, tag)); !os.IsNotExist(err) {
		t.Errorf("its pid file: %v, want it removed", err)
	}
}

// TestDown: while the host is unreachable, Run fails at once with
// ErrDown and what ssh said, Up gives up with the same; once the host is
// back, the Host is too.
func TestDown(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{})
	srv.Stop()
	poll.Until(t, "the Host to see the host go", func() bool {
		_, err := h.Run(t.Context(), "", []string{"true"})
		return errors.Is(err, sshhost.ErrDown) && strings.Contains(err.Error(), "Connection refused")
	})
	begin := time.Now()
	_, err := h.Run(t.Context(), "", []string{"git", "status"})
	if took := time.Since(begin); took > time.Second {
		t.Errorf("Run while down took %v, want it to fail at once", took)
	}
	var he *sshhost.Error
	if !errors.As(err, &he) || he.Host != "box" || !strings.Contains(err.Error(), `host "box": run git status: the ssh connection is down`) {
		t.Errorf("Run while down = %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := h.Up(ctx); !errors.Is(err, sshhost.ErrDown) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("Up while down = %v, want ErrDown, the deadline and what ssh said", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := h.Attempt(ctx); err != nil {
		t.Fatalf("Attempt after the restart: %v", err)
	}
	if out, err := h.Run(t.Context(), "", []string{"echo", "back"}); err != nil || string(out) != "back\n" {
		t.Errorf("Run after the restart = %q, %v", out, err)
	}
}

// TestUnreachable: a host that never answers, or refuses the key, says so
// in Up's error, naming the host.
func TestUnreachable(t *testing.T) {
	srv := startServer(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"refused", append(srv.SSHArgs(), "-p", "1"), "Connection refused"},
		{"no such user", append(srv.SSHArgs(), "-l", "no-such-user-sshhost"), "Permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hostFor(t, srv, sshhost.Config{SSHArgs: tt.args})
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			err := h.Up(ctx)
			if err == nil || !strings.Contains(err.Error(), `host "box": connect: `) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Up = %v, want the host, connect and %q", err, tt.want)
			}
			// Attempt answers with the next attempt, without waiting out
			// the reconnects.
			begin := time.Now()
			err = h.Attempt(t.Context())
			if !errors.Is(err, sshhost.ErrDown) || !strings.Contains(err.Error(), `host "box": connect: `) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Attempt = %v, want ErrDown, the host, connect and %q", err, tt.want)
			}
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("Attempt took %v", took)
			}
		})
	}
}

// TestForward: a reverse forward reaches a server on this machine from
// the host's loopback; it is made again, on the same port, after the
// connection drops; Close ends it.
func TestForward(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{})
	addr := echoServer(t)
	f, err := h.Forward(t.Context(), addr)
	if err != nil {
		t.Fatalf("Forward: %v", err)
	}
	port := f.Port()
	if port <= 0 {
		t.Fatalf("Port = %d", port)
	}
	// bash's /dev/tcp: a client on the host.
	dial := func() (string, error) { return dialOnHost(t, h, f.Port()) }
	if got, err := dial(); err != nil || got != "here: hello\n" {
		t.Fatalf("through the forward: %q, %v", got, err)
	}

	srv.DropConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	poll.Until(t, "the Host to see the drop", func() bool { _, err := h.Run(ctx, "", []string{"true"}); return errors.Is(err, sshhost.ErrDown) })
	if err := h.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	if f.Port() != port {
		t.Logf("the forward came back on port %d, not %d (the host still held it)", f.Port(), port)
	}
	if got, err := dial(); err != nil || got != "here: hello\n" {
		t.Fatalf("through the forward after the reconnect: %q, %v", got, err)
	}

	if err := f.Close(t.Context()); err != nil {
		t.Fatalf("Forward.Close: %v", err)
	}
	if got, err := dial(); err == nil {
		t.Errorf("through the closed forward: %q, want a refused connection", got)
	}
}

// TestClose: Close stops the instance's agents on the host, ends the
// connection and removes its directory; the Host then refuses work.
func TestClose(t *testing.T) {
	srv := startServer(t)
	h := hostFor(t, srv, sshhost.Config{Instance: "lead"})
	if err := h.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	p, _ := agent(t, h, sshhost.Tag{Instance: "lead", Session: "s1"}, "", nil, "sh", "-c", `trap "" TERM; sleep 304`)
	poll.Until(t, "the agent on the host", func() bool { _, ok := onHost(srv, "sleep 304"); return ok })
	poll.Until(t, "its pid file", func() bool {
		_, err := os.Stat(pidFile(srv.Home, sshhost.Tag{Instance: "lead", Session: "s1"}))
		return err == nil
	})
	if err := h.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitEnd(t, p)
	if _, ok := onHost(srv, "sleep 304"); ok {
		t.Errorf("the agent still runs on the host after Close")
	}
	if err := h.Up(t.Context()); !errors.Is(err, sshhost.ErrClosed) {
		t.Errorf("Up after Close = %v, want ErrClosed", err)
	}
	if _, err := h.Run(t.Context(), "", []string{"true"}); !errors.Is(err, sshhost.ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
}

// TestNew: a Config that cannot work is refused, naming what is wrong.
func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  sshhost.Config
		want string
	}{
		{"no name", sshhost.Config{Dest: "box"}, "host name"},
		{"name with a slash", sshhost.Config{Name: "a/b", Dest: "box"}, "host name"},
		{"no destination", sshhost.Config{Name: "box"}, "destination"},
		{"an option as destination", sshhost.Config{Name: "box", Dest: "-oProxyCommand=x"}, "destination"},
		{"bad instance", sshhost.Config{Name: "box", Dest: "box", Instance: "a b"}, "instance"},
		{"long run dir", sshhost.Config{Name: "box", Dest: "box", RunDir: "/" + strings.Repeat("d", 100)}, "control socket"},
	}
	for _, tt := range tests {
		if _, err := sshhost.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error about %s", tt.name, err, tt.want)
		}
	}
}
