package sshhost_test

import (
	"context"
	"log/slog"
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
