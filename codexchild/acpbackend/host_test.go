package acpbackend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// TestHostAgent: an agent on a host (the loopback sshd, the mock agent on
// its PATH) runs there, in the session's cwd there, with the backend's
// environment passed on; its team-mail tool server runs here and is
// reached over the host's reverse forward, as the same identity; two
// turns keep one session. The connection dropped mid-turn fails that
// turn; once the host is back (the agent left there stopped by the
// reconnect), the next turn reopens the same session (session/load) in
// a new process there.
func TestHostAgent(t *testing.T) {
	e := newACPEnv(t)
	srv := sshtest.Start(t, &sshtest.Options{Path: []string{filepath.Dir(e.agent)}})
	h, err := sshhost.New(sshhost.Config{Name: "box", Dest: srv.Alias, SSHArgs: srv.SSHArgs(), Instance: "test",
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, ReapGrace: 500 * time.Millisecond, Logger: acpLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the backend's Close, before the server's leak check
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("closing the host: %v", err)
		}
	})
	up := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		if err := h.Up(ctx); err != nil {
			t.Fatal(err)
		}
	}
	up()
	cfg := e.config(t)
	cfg.Host, cfg.Command = h, "mockacp" // the name on the host's PATH
	b := e.backend(t, cfg)
	p := e.params(t)
	p.Cwd = filepath.Join(srv.Home, "work")
	if err := os.Mkdir(p.Cwd, 0o700); err != nil {
		t.Fatal(err)
	}

	res := acpTurnOK(t, b, backend.TurnRequest{Prompt: "run echo \"$ATM_SSHTEST $(pwd)\"", Params: p})
	if want := srv.Dir + " " + p.Cwd; res.Text != want {
		t.Errorf("first turn: %q, want the host's mark and the cwd there %q", res.Text, want)
	}
	thread := res.ThreadID
	res = acpTurnOK(t, b, backend.TurnRequest{ThreadID: thread, Prompt: "mcp atm atm_send {\"to\":\"arch\",\"message\":\"from the host\"}", Params: p})
	if want := `sent as m1: {"to":"arch","message":"from the host"}`; res.ThreadID != thread || res.Text != want {
		t.Errorf("second turn: %+v, want the tool's answer %q on the same thread", res, want)
	}
	log, _ := os.ReadFile(e.mcpLog)
	if got, want := string(log), "m1 {\"to\":\"arch\",\"message\":\"from the host\"}\n"; got != want {
		t.Errorf("the tool server here got %q, want %q", got, want)
	}

	// The connection drops while a turn runs.
	rec := newACPRecorder()
	done := make(chan error, 1)
	go func() {
		_, err := b.Turn(context.Background(), backend.TurnRequest{ThreadID: thread, Prompt: "say started\nsleep 60000", Params: p, Handler: rec, Timeout: time.Minute})
		done <- err
	}()
	select {
	case <-rec.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the third turn did not start")
	}
	srv.DropConnections()
	select {
	case err := <-done:
		var ee *backend.ExitError
		if !errors.As(err, &ee) || ee.Status.Code != 255 {
			t.Errorf("the turn cut by the drop: %v, want the exit of its ssh (255)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the turn cut by the drop did not end")
	}
	waitDown(t, h)
	up()
	res = acpTurnOK(t, b, backend.TurnRequest{ThreadID: thread, Prompt: "say after the drop", Params: p})
	if res.ThreadID != thread || res.Replaced != "" || res.Text != "after the drop" {
		t.Errorf("after the reconnect: %+v, want the same session reopened", res)
	}
	state, _ := os.ReadFile(filepath.Join(e.state, thread+".json"))
	for _, said := range []string{"from the host", "after the drop"} {
		if !strings.Contains(string(state), said) {
			t.Errorf("the session's transcript on the host lacks %q:\n%s", said, state)
		}
	}
}

// waitDown waits until h has seen its connection end.
func waitDown(t *testing.T, h *sshhost.Host) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for h.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the host never saw the drop")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
