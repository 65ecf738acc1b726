package sshhost_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/google/go-cmp/cmp"
)

// launcher is a childproc.Launcher that starts the command on h as the
// session tag: what a backend configured with a host does.
func launcher(h *sshhost.Host, tag sshhost.Tag) childproc.Launcher {
	return func(s childproc.Spec) (childproc.Spec, error) {
		c, err := h.Command(tag, sshhost.Command{Path: s.Path, Args: s.Args, Env: s.AddEnv, Dir: s.Dir})
		if err != nil {
			return childproc.Spec{}, err
		}
		return childproc.Spec{Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir, Stdin: c.Stdin}, nil
	}
}

// agent starts argv on h as tag, supervised by childproc as any child,
// and reads its stdout in the background; the returned func waits for
// the end of stdout and returns it.
func agent(t *testing.T, h *sshhost.Host, tag sshhost.Tag, dir string, env []string, argv ...string) (*childproc.Process, func() string) {
	t.Helper()
	p, err := childproc.Start(childproc.Config{
		Name:   "test agent",
		Spec:   childproc.Spec{Path: argv[0], Args: argv[1:], Env: append(os.Environ(), env...), AddEnv: env, Dir: dir},
		Launch: launcher(h, tag),
		Grace:  300 * time.Millisecond,
		Logger: logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	var out strings.Builder
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer p.StdoutDone()
		_, _ = io.Copy(&out, p.Stdout())
	}()
	return p, func() string { <-read; return out.String() }
}

func pidFile(home string, tag sshhost.Tag) string {
	return filepath.Join(home, ".atm-agent-mcp", "run", tag.Instance, tag.Session+".pid")
}

// TestCommand: an agent started through the launcher runs on the host in
// its directory, with only the environment the caller added (passed on
// stdin, not in its command line), talks over stdin and stdout, has its
// pid file while it runs, and its exit status comes back.
func TestCommand(t *testing.T) {
	h, srv := newHost(t, nil, sshhost.Config{})
	dir := filepath.Join(srv.Home, "work")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSHHOST_LOCAL_ONLY", "this machine's")
	tag := sshhost.Tag{Instance: "lead", Session: "s1"}
	script := `echo "$GREETING|${SSHHOST_LOCAL_ONLY:-unset}|$(pwd)"; ps -ww -o args= -p $PPID | grep -c "s secre[t]" ; read -r line; echo "got $line"; [ "$(cat "$HOME/.atm-agent-mcp/run/lead/s1.pid")" = "$PPID" ] && echo "pid file of $PPID"; exit 7`
	p, out := agent(t, h, tag, dir, []string{"GREETING=hello 'there', it's secret"}, "sh", "-c", script)
	if _, err := p.Write([]byte("a line\n")); err != nil {
		t.Fatal(err)
	}
	ee := waitEnd(t, p)
	got := out()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 4 {
		t.Fatalf("stdout = %q, want 4 lines", got)
	}
	// The pid file holds the wrapper's pid: the agent's parent.
	if diff := cmp.Diff([]string{"hello 'there', it's secret|unset|" + dir, "0", "got a line", "pid file of"}, append(lines[:3], strings.TrimRight(lines[3], "0123456789 "))); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if ee.Status.Code != 7 {
		t.Errorf("exit status %v, want code 7", ee.Status)
	}
	if _, err := os.Stat(pidFile(srv.Home, tag)); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after the agent ended: %v", err)
	}

	// A directory that is not on the host: 125, and a message saying so.
	p, _ = agent(t, h, tag, filepath.Join(srv.Home, "nowhere"), nil, "true")
	if ee := waitEnd(t, p); ee.Status.Code != 125 || !strings.Contains(ee.Stderr, "no directory "+filepath.Join(srv.Home, "nowhere")+" on this host") {
		t.Errorf("agent in a missing directory: %v, stderr %q; want code 125 and a message", ee.Status, ee.Stderr)
	}
}

func waitEnd(t *testing.T, p *childproc.Process) *childproc.ExitError {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not end")
	}
	return p.Err()
}

// TestCommandRefuses: what cannot be passed to the host safely is an
// error, before anything starts.
func TestCommandRefuses(t *testing.T) {
	h, err := sshhost.New(sshhost.Config{Name: "box", Dest: "box.invalid", MinBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	ok := sshhost.Tag{Instance: "lead", Session: "s1"}
	tests := []struct {
		name string
		tag  sshhost.Tag
		c    sshhost.Command
		want string
	}{
		{"session with a slash", sshhost.Tag{Instance: "lead", Session: "../x"}, sshhost.Command{Path: "codex"}, "tag"},
		{"no instance", sshhost.Tag{Session: "s1"}, sshhost.Command{Path: "codex"}, "tag"},
		{"no program", ok, sshhost.Command{}, "program"},
		{"assignment as program", ok, sshhost.Command{Path: "A=1"}, "program"},
		{"bad variable", ok, sshhost.Command{Path: "codex", Env: []string{"A-B=1"}}, "environment entry"},
		{"no value", ok, sshhost.Command{Path: "codex", Env: []string{"AB"}}, "environment entry"},
		{"newline in a value", ok, sshhost.Command{Path: "codex", Env: []string{"A=1\n2"}}, "newline"},
		{"NUL in an argument", ok, sshhost.Command{Path: "codex", Args: []string{"a\x00b"}}, "NUL"},
		{"a preamble already", ok, sshhost.Command{Path: "codex", Stdin: []byte("x")}, "preamble"},
	}
	for _, tt := range tests {
		if _, err := h.Command(tt.tag, tt.c); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `host "box"`) {
			t.Errorf("%s: Command error = %v, want one naming the host and saying %q", tt.name, err, tt.want)
		}
	}
	c, err := h.Command(ok, sshhost.Command{Path: "codex", Args: []string{"app-server"}, Env: []string{"TOKEN=s3cret"}, Dir: "/srv/repo"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, "s3cret") }) {
		t.Errorf("the environment is on the command line: %q", c.Args)
	}
	if string(c.Stdin) != "TOKEN=s3cret\n\n" {
		t.Errorf("preamble = %q, want the environment then an empty line", c.Stdin)
	}
}
