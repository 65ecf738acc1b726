package sshhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/google/go-cmp/cmp"
)

// TestExec: a command runs on the host in its directory with the
// environment given (and nothing of this machine's), its stdin fed and
// its stdout and stderr streamed; its own failures are its exit status
// (ExitCode), the wrapper's and ssh's are not.
func TestExec(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{Instance: "lead"})
	repo := filepath.Join(srv.Home, "repo")
	if err := os.Mkdir(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSHHOST_LOCAL_ONLY", "this machine's")
	tests := []struct {
		name       string
		c          sshhost.Command
		stdin      string
		wantOut    string
		wantErrOut string
		wantCode   int   // the command's exit status, when it failed
		wantErr    error // the sentinel of a failure that is not the command's
	}{
		{name: "env dir stdin", c: sshhost.Command{Path: "sh", Args: []string{"-c", `pwd; echo "$A|${SSHHOST_LOCAL_ONLY:-unset}"; cat; echo oops >&2`},
			Env: []string{"A=it's a b"}, Dir: repo}, stdin: "line one\nline two\n",
			wantOut: repo + "\nit's a b|unset\nline one\nline two\n", wantErrOut: "oops\n"},
		{name: "binary stdin", c: sshhost.Command{Path: "od", Args: []string{"-An", "-c"}}, stdin: "a\x00b\n",
			wantOut: "   a  \\0   b  \\n\n"},
		{name: "exit status", c: sshhost.Command{Path: "sh", Args: []string{"-c", "echo half; exit 3"}}, wantOut: "half\n", wantCode: 3},
		{name: "exit 255 of the command", c: sshhost.Command{Path: "sh", Args: []string{"-c", "exit 255"}}, wantCode: 255},
		{name: "exit 125 of the command", c: sshhost.Command{Path: "sh", Args: []string{"-c", "exit 125"}}, wantCode: 125},
		{name: "no dir", c: sshhost.Command{Path: "pwd", Dir: filepath.Join(srv.Home, "nowhere")}, wantErr: sshhost.ErrNoDir,
			wantErrOut: "atm-agent-mcp: no directory " + filepath.Join(srv.Home, "nowhere") + " on this host\n"},
		{name: "bad env", c: sshhost.Command{Path: "true", Env: []string{"1A=x"}}, wantCode: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			err := h.Exec(t.Context(), tt.c, strings.NewReader(tt.stdin), &out, &errOut)
			if diff := cmp.Diff(tt.wantOut, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrOut, errOut.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			code, isExit := sshhost.ExitCode(err)
			switch {
			case tt.wantCode == 0 && tt.wantErr == nil:
				if err != nil {
					t.Fatalf("Exec: %v", err)
				}
			case tt.wantCode == -1:
				if err == nil || isExit {
					t.Fatalf("Exec = %v, want a refusal", err)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || isExit {
					t.Fatalf("Exec = %v (exit code %d %v), want %v and no exit code", err, code, isExit, tt.wantErr)
				}
			default:
				if !isExit || code != tt.wantCode {
					t.Fatalf("Exec = %v: ExitCode %d %v, want %d", err, code, isExit, tt.wantCode)
				}
				var he *sshhost.Error
				if !errors.As(err, &he) || he.Host != "box" {
					t.Errorf("Exec error %v, want an *sshhost.Error of box", err)
				}
			}
		})
	}
	// No pid file is left behind.
	if left, _ := filepath.Glob(filepath.Join(srv.Home, ".atm-agent-mcp", "run", "lead", "*.pid")); len(left) != 0 {
		t.Errorf("pid files left on the host: %q", left)
	}
}

// TestExecStopped: a command whose context ends is stopped on the host
// too, not only its ssh here.
func TestExecStopped(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{Instance: "lead"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- h.Exec(ctx, sshhost.Command{Path: "sh", Args: []string{"-c", "sleep 304; echo never"}}, nil, nil, nil)
	}()
	poll.Until(t, "sleep 304 on the host", func() bool { _, ok := onHost(srv, "sleep 304"); return ok })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Exec = %v, want the context's end", err)
		}
		if _, ok := sshhost.ExitCode(err); ok {
			t.Errorf("ExitCode of a stopped command is ok")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Exec did not return after its context ended")
	}
	poll.Until(t, "sleep 304 to be gone from the host", func() bool { _, ok := onHost(srv, "sleep 304"); return !ok })
}

// TestExecDown: while the connection is down Exec fails at once, with
// ErrDown and no exit status.
func TestExecDown(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{})
	srv.Stop()
	poll.Until(t, "the Host to see the host away", func() bool { return h.Err() != nil })
	err := h.Exec(t.Context(), sshhost.Command{Path: "true"}, nil, nil, nil)
	if !errors.Is(err, sshhost.ErrDown) {
		t.Errorf("Exec = %v, want ErrDown", err)
	}
	if _, ok := sshhost.ExitCode(err); ok {
		t.Errorf("ExitCode of a failure of the connection is ok")
	}
}

// TestCheckForwards: a reverse forward cancelled on the master (as
// `ssh -O cancel` does) is found gone and made again on its port; one that
// is there is left alone.
func TestCheckForwards(t *testing.T) {
	h, _ := newHost(t, nil, sshhost.Config{})
	addr := echoServer(t)
	f, err := h.Forward(t.Context(), addr)
	if err != nil {
		t.Fatalf("Forward: %v", err)
	}
	port := f.Port()
	dial := func() (string, error) { return dialOnHost(t, h, port) }
	if remade, err := h.CheckForwards(t.Context()); err != nil || len(remade) != 0 {
		t.Fatalf("CheckForwards of a live forward = %v, %v; want nothing made again", remade, err)
	}
	// Cancel it behind the Host's back, on its master's control socket:
	// as it was asked for (port 0: the master's choice), then, made again
	// on its port, as that port.
	ctl := sshhost.ControlSocket(h)
	for _, spec := range []string{fmt.Sprintf("127.0.0.1:0:%s", addr), fmt.Sprintf("127.0.0.1:%d:%s", port, addr)} {
		if out, err := exec.Command("ssh", "-F", "/dev/null", "-S", ctl, "-O", "cancel", "-R", spec, "box").CombinedOutput(); err != nil || len(out) > 0 {
			t.Fatalf("ssh -O cancel -R %s: %v\n%s", spec, err, out)
		}
		if got, err := dial(); err == nil {
			t.Fatalf("through the cancelled forward: %q, want a refused connection", got)
		}
		remade, err := h.CheckForwards(t.Context())
		if err != nil || len(remade) != 1 || remade[0] != port {
			t.Fatalf("CheckForwards = %v, %v; want [%d] made again", remade, err, port)
		}
		if got, err := dial(); err != nil || got != "here: hello\n" {
			t.Fatalf("through the forward made again: %q, %v", got, err)
		}
	}
	if h.Err() != nil {
		t.Errorf("the connection after the check: %v", h.Err())
	}
}
