package sshhost_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// logger is the test's log: the host's log when -v.
func logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.DiscardHandler)
}

// newHost starts a loopback sshd and a Host for it, up; cfg adjusts the
// Host's Config (Name, Dest and SSHArgs are filled in when empty). The
// Host is closed at the test's end, before the server's leak check.
func newHost(t *testing.T, opts *sshtest.Options, cfg sshhost.Config) (*sshhost.Host, *sshtest.Server) {
	t.Helper()
	srv := sshtest.Start(t, opts)
	if testing.Verbose() {
		t.Logf("sshd log %s", srv.Log)
	}
	h := hostFor(t, srv, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := h.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	return h, srv
}

// hostFor is a Host for srv, not waited for, closed at the test's end.
func hostFor(t *testing.T, srv *sshtest.Server, cfg sshhost.Config) *sshhost.Host {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "box"
	}
	if cfg.Dest == "" {
		cfg.Dest = srv.Alias
	}
	if cfg.SSHArgs == nil {
		cfg.SSHArgs = srv.SSHArgs()
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 50 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 500 * time.Millisecond
	}
	if cfg.ReapGrace == 0 {
		cfg.ReapGrace = 500 * time.Millisecond
	}
	cfg.Logger = logger(t)
	h, err := sshhost.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// startServer starts a loopback sshd with defaults.
func startServer(t *testing.T) *sshtest.Server {
	t.Helper()
	return sshtest.Start(t, nil)
}

// echoServer listens on this machine's loopback until the test ends and
// answers each connection's first line with "here: " and the line; it
// returns its address.
func echoServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			fmt.Fprintf(c, "here: %s", line)
			c.Close()
		}
	}()
	return l.Addr().String()
}

// dialOnHost connects to port on the host's loopback from the host (bash's
// /dev/tcp), says hello and returns what came back.
func dialOnHost(t *testing.T, h *sshhost.Host, port int) (string, error) {
	out, err := h.Run(t.Context(), "", []string{"bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/$0 && echo hello >&3 && cat <&3`, fmt.Sprint(port)})
	return string(out), err
}
