package registry

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// childRoleEnv names the role a re-executed test binary plays. The child
// roles live in child_test.go.
const childRoleEnv = "REGISTRY_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

// fakeClock is a clock that starts at a fixed time and can be moved.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// testHome points ATM_HOME at a fresh directory and returns it.
func testHome(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("ATM_HOME", home)
	return home
}

// openTest opens the registry of identity in team "team" under ATM_HOME and
// closes it at the end of the test.
func openTest(t testing.TB, identity string, clock *fakeClock) *Registry {
	t.Helper()
	cfg := Config{Team: "team", Identity: identity}
	if clock != nil {
		cfg.Now = clock.Now
	}
	r, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", identity, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// child is a re-executed test binary playing a role.
type child struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin *os.File
	lines chan string
}

// startChild starts the test binary in role with extra environment. Its
// stdout lines arrive on c.lines; the process is killed and reaped when the
// test ends if it is still running.
func startChild(t testing.TB, role string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childRoleEnv + "=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = pr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	c := &child{t: t, cmd: cmd, stdin: pw, lines: make(chan string, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		pw.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			for range c.lines {
			}
			<-done
			cmd.Wait()
		}
	})
	return c
}

// send writes one command line to the child's stdin.
func (c *child) send(line string) {
	c.t.Helper()
	if _, err := fmt.Fprintln(c.stdin, line); err != nil {
		c.t.Fatalf("send %q to child: %v", line, err)
	}
}

// expect returns the next stdout line, failing after 10s.
func (c *child) expect() string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("child %d exited early", c.cmd.Process.Pid)
		}
		return l
	case <-time.After(10 * time.Second):
		c.t.Fatalf("child %d: no output within 10s", c.cmd.Process.Pid)
	}
	return ""
}

// expectPrefix returns the next line, which must start with prefix.
func (c *child) expectPrefix(prefix string) string {
	c.t.Helper()
	l := c.expect()
	if !strings.HasPrefix(l, prefix) {
		c.t.Fatalf("child said %q, want a line starting with %q", l, prefix)
	}
	return l
}

// kill SIGKILLs the child and waits for it, draining its output. It returns
// the lines it wrote that were not read yet.
func (c *child) kill() []string {
	c.t.Helper()
	c.cmd.Process.Kill()
	var rest []string
	for l := range c.lines {
		rest = append(rest, l)
	}
	c.cmd.Wait()
	return rest
}
