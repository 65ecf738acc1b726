package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Runner runs a program on the host that holds the checkouts: the user's
// git, or the sh that runs a setup or check command. The local one is
// [LocalRunner]; a remote host's runner would run the same commands over
// ssh, so nothing here assumes which.
type Runner interface {
	// Run runs c and returns when it has exited and its output has been
	// copied. A program that ran and failed is an [*ExitError]; any other
	// error means it could not run. When ctx ends the program is stopped.
	Run(ctx context.Context, c *Command) error
}

// Command is one program for a [Runner].
type Command struct {
	// Dir is the directory it runs in. required.
	Dir string
	// Name is the program: "git" or "sh". required.
	Name string
	// Args are its arguments, passed as a list (never through a shell).
	Args []string
	// Env is added to the runner's environment (KEY=value). optional.
	Env []string
	// Stdin feeds its standard input. optional: nil is empty.
	Stdin io.Reader
	// Stdout and Stderr receive its output. optional: nil discards.
	Stdout, Stderr io.Writer
}

// ExitError is the error of a program that ran and did not exit with 0.
type ExitError struct {
	// Code is the exit status, or -1 when a signal ended it.
	Code int
	// Signal names the signal that ended it ("" when it exited).
	Signal string
}

func (e *ExitError) Error() string {
	if e.Signal != "" {
		return "killed by signal " + e.Signal
	}
	return "exit status " + strconv.Itoa(e.Code)
}

// LocalRunner runs programs on this machine, each in its own process group:
// when the context ends the group gets SIGTERM, and SIGKILL after Grace.
type LocalRunner struct {
	// Grace is how long a stopped program has between SIGTERM and SIGKILL.
	// optional: 0 means 3s.
	Grace time.Duration
}

// repoEnv are the variables that would point git at another repository,
// index or work tree than the directory it runs in: never inherited.
var repoEnv = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX",
	"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"}

// Run implements [Runner].
func (r LocalRunner) Run(ctx context.Context, c *Command) error {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(scrubEnv(os.Environ()), c.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = r.Grace
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 3 * time.Second
	}
	err := cmd.Run()
	if cmd.Process != nil && ctx.Err() != nil {
		// What the group's leader left behind (a make's children) goes too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		x := &ExitError{Code: ee.ExitCode()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			x.Signal = ws.Signal().String()
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%w)", x, ctx.Err())
		}
		return x
	}
	return err
}

// scrubEnv drops repoEnv from env.
func scrubEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, r := range repoEnv {
			if k == r {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// GitError is a git command that failed: its arguments, where it ran, and
// what it said on stderr.
type GitError struct {
	Dir    string
	Args   []string
	Stderr string
	Err    error // *ExitError, or why git could not run
}

func (e *GitError) Error() string {
	msg := fmt.Sprintf("git %s (in %s): %v", strings.Join(e.Args, " "), e.Dir, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + clipTail(s, 2000)
	}
	return msg
}

func (e *GitError) Unwrap() error { return e.Err }

// exitCode returns the exit status of a failed program, when it ran.
func exitCode(err error) (int, bool) {
	var x *ExitError
	if errors.As(err, &x) && x.Signal == "" {
		return x.Code, true
	}
	return 0, false
}

// git runs the user's git through a Runner.
type git struct {
	r   Runner
	log *slog.Logger
}

// gitOpts adjusts one git command.
type gitOpts struct {
	env   []string
	stdin io.Reader
	// readOnly sets GIT_OPTIONAL_LOCKS=0: a status or diff never takes the
	// index lock to refresh it (an agent's git may be running there).
	readOnly bool
}

// gitEnv is set for every git command: no prompt for credentials, messages
// in one language.
var gitEnv = []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}

// run runs git args in dir and returns its stdout; a non-zero exit is a
// *GitError carrying stderr.
func (g *git) run(ctx context.Context, dir string, o gitOpts, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	env := append(append([]string{}, gitEnv...), o.env...)
	if o.readOnly {
		env = append(env, "GIT_OPTIONAL_LOCKS=0")
	}
	start := time.Now()
	err := g.r.Run(ctx, &Command{Dir: dir, Name: "git", Args: args, Env: env, Stdin: o.stdin, Stdout: &stdout, Stderr: &stderr})
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.Debug("git", "dir", dir, "args", args, "took", time.Since(start), "err", err)
	}
	if err != nil {
		g.log.Debug("git failed", "dir", dir, "args", args, "err", err, "stderr", clipTail(stderr.String(), 500))
		return stdout.Bytes(), &GitError{Dir: dir, Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// out is run with default options, its output trimmed of the final newline.
func (g *git) out(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := g.run(ctx, dir, gitOpts{}, args...)
	return strings.TrimSuffix(string(b), "\n"), err
}

// lines is out split into lines ("" gives none).
func (g *git) lines(ctx context.Context, dir string, args ...string) ([]string, error) {
	s, err := g.out(ctx, dir, args...)
	if err != nil || s == "" {
		return nil, err
	}
	return strings.Split(s, "\n"), nil
}

// MinGitVersion is the oldest git this package works with: merge-tree
// --write-tree (a merge without a checkout) came in 2.38.
var MinGitVersion = [2]int{2, 38}

// gitVersion runs `git version` and returns major and minor.
func (g *git) version(ctx context.Context, dir string) (string, [2]int, error) {
	s, err := g.out(ctx, dir, "version")
	if err != nil {
		return "", [2]int{}, err
	}
	v, err := parseGitVersion(s)
	return s, v, err
}

// parseGitVersion reads "git version 2.39.5" (also "2.39.3 (Apple
// Git-146)", "2.45.1.windows.1").
func parseGitVersion(s string) ([2]int, error) {
	f := strings.Fields(s)
	if len(f) < 3 || f[0] != "git" || f[1] != "version" {
		return [2]int{}, fmt.Errorf("workspace: unexpected `git version` output %q", s)
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return [2]int{}, fmt.Errorf("workspace: unexpected git version %q", f[2])
	}
	maj, err1 := strconv.Atoi(parts[0])
	min, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return [2]int{}, fmt.Errorf("workspace: unexpected git version %q", f[2])
	}
	return [2]int{maj, min}, nil
}

// versionOK reports whether v is at least MinGitVersion.
func versionOK(v [2]int) bool {
	return v[0] > MinGitVersion[0] || v[0] == MinGitVersion[0] && v[1] >= MinGitVersion[1]
}

// splitNUL splits -z output into its fields, without the empty one after
// the last NUL.
func splitNUL(b []byte) []string {
	s := string(b)
	s = strings.TrimSuffix(s, "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// clipTail keeps the last n bytes of s (at a rune boundary), marking the cut.
func clipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && (s[i]&0xC0) == 0x80 {
		i++
	}
	return "…" + s[i:]
}

// asExit returns the *ExitError in err's chain.
func asExit(err error) (*ExitError, bool) {
	var x *ExitError
	ok := errors.As(err, &x)
	return x, ok
}
