package hostrun_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/hostrun"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// A host's connection to a loopback sshd, closed at the test's end.
func connect(t *testing.T) (*sshhost.Host, *sshtest.Server) {
	t.Helper()
	srv := sshtest.Start(t, nil)
	h, err := sshhost.New(sshhost.Config{Name: "box", Dest: srv.Alias, SSHArgs: srv.SSHArgs(), MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
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
	return h, srv
}

// TestRunner: a command runs on the host, in its directory there, with
// its environment and input; its own exit status is a
// *workspace.ExitError; no connection yet is an error that names the host.
func TestRunner(t *testing.T) {
	sshtest.Available(t)
	h, srv := connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := h.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	r := hostrun.Runner{Name: "box", Conn: func() *sshhost.Host { return h }}
	var out bytes.Buffer
	err := r.Run(ctx, &workspace.Command{Dir: srv.Home, Name: "sh", Args: []string{"-c", `echo "$ATM_X $(pwd) $(cat)"; echo oops >&2; exit 3`},
		Env: []string{"ATM_X=there"}, Stdin: strings.NewReader("input"), Stdout: &out, Stderr: &bytes.Buffer{}})
	var ee *workspace.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("Run = %v, want exit status 3", err)
	}
	if got, want := out.String(), "there "+srv.Home+" input\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	none := hostrun.Runner{Name: "box", Conn: func() *sshhost.Host { return nil }}
	if err := none.Run(ctx, &workspace.Command{Name: "true"}); err == nil || !strings.Contains(err.Error(), "host box: not connected") {
		t.Errorf("Run without a connection = %v", err)
	}
}

// TestManager: a workspace manager on the host lists the worktrees of a
// repository there (here: none yet) through its git there.
func TestManager(t *testing.T) {
	sshtest.Available(t)
	h, srv := connect(t)
	repo := filepath.Join(srv.Home, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	m, err := hostrun.Manager(ctx, h, workspace.Config{Host: "box"})
	if err != nil {
		t.Fatalf("Manager: %v", err)
	}
	if m.Host() != "box" || m.GitVersion() == "" {
		t.Errorf("Host %q, GitVersion %q", m.Host(), m.GitVersion())
	}
	if _, err := m.List(ctx, repo); err == nil || !strings.Contains(err.Error(), "git") {
		t.Errorf("List of a folder that is no repository = %v, want git's refusal", err)
	}
	// A repository there: git ran there (the sshd's home stands for the
	// host's disk).
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=T", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if list, err := m.List(ctx, repo); err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v; want no worktrees", list, err)
	}
}
