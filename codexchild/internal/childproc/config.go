package childproc

import (
	"cmp"
	"log/slog"
	"time"
)

// Defaults of Config.
const (
	// DefaultGrace is each of the two waits of a graceful stop.
	DefaultGrace = 2 * time.Second
	// DefaultWriteTimeout bounds one write to a child's stdin that the
	// pipe cannot take at once. Codex and the ACP agents read their stdin
	// all the time, so a write that cannot finish for this long means a
	// wedged child: it is killed rather than left to block every caller
	// behind the writer's lock.
	DefaultWriteTimeout = 30 * time.Second
)

// Spec is a command: a program, its arguments, its environment and its
// working directory.
type Spec struct {
	// Path is the program: a name looked up in PATH, or a path.
	Path string
	// Args are its arguments, without the program.
	Args []string
	// Env is its whole environment. optional: nil means this process's.
	Env []string
	// AddEnv are the entries of Env that the caller added to this
	// process's environment (all of Env when it replaced it): what a
	// Launcher for another machine passes on there, where this
	// machine's environment means nothing. Start itself does not read
	// it. optional: nil means none.
	AddEnv []string
	// Dir is its working directory. optional: "" means this process's.
	Dir string
	// Stdin is what Start writes to the child's stdin before anything
	// else, at most MaxStdinPreamble bytes: a Launcher's preamble for the
	// command it wraps (say the environment a remote wrapper reads from
	// stdin, where no other user of the host sees it). optional: nil
	// writes nothing.
	Stdin []byte
}

// MaxStdinPreamble bounds Spec.Stdin: it is written into the empty pipe at
// start, which takes that much without waiting for the child to read.
const MaxStdinPreamble = 4096

// A Launcher says where a child runs: it turns the command the caller
// asked for into the command to start on this machine. The supervisor
// starts what it returns (through Config.Guard when set) in a process
// group of its own, and owns its pipes and its end: closing its stdin,
// the signals to its group, its exit status.
//
// Without one the command runs here as it is. A launcher for another
// machine would return, say, `ssh -T host -- <the command, quoted for the
// remote shell>` with the environment and the directory folded into that
// command line, and this machine's environment for ssh itself: ssh passes
// stdin, stdout, stderr, stdin's end and the exit status on, so the
// supervision stays the same. Such a launcher passes on Spec.AddEnv, not
// Spec.Env, and may hand the wrapped command a preamble on stdin
// (Spec.Stdin of what it returns).
type Launcher func(Spec) (Spec, error)

// Config says how to start a child and supervise it. Only Spec.Path is
// required.
type Config struct {
	// Name is how the log and errors call the child ("codex child",
	// "claude agent"): "<Name> exited", "<Name> process killed by signal
	// killed …". optional: "" means "child".
	Name string
	// Spec is the command to run.
	Spec Spec
	// Launch says where it runs (sshhost.Host.Launcher: on a host).
	// optional: nil runs Spec here.
	Launch Launcher
	// Guard is the guard command (codexchild/guard's Main) the command is
	// started through: its arguments come first, then the program and
	// its arguments. The guard gets a parent-death signal (Linux) and is
	// forked from a thread that lives as long as the process. optional:
	// nil starts the command directly.
	Guard []string
	// Grace is how long Stop waits after closing stdin before SIGTERM to
	// the group, and again before SIGKILL; it is also the exec.Cmd's
	// WaitDelay. optional: 0 means DefaultGrace.
	Grace time.Duration
	// WriteTimeout bounds a write to stdin that the pipe cannot take at
	// once; the child is then killed (ErrStdinBlocked). optional: 0 means
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Quiet logs the child's start and exit at debug, not info: a short
	// command run often (git over ssh at every turn's end). optional.
	Quiet bool
	// StderrLevel is the level at which a line of the child's stderr is
	// logged (after its terminal escapes are stripped). optional: nil logs
	// every line at info.
	StderrLevel func(line string) slog.Level
	// Logger receives the supervisor's log and the child's stderr, line by
	// line. optional: nil discards.
	Logger *slog.Logger
}

func (c *Config) name() string                { return cmp.Or(c.Name, "child") }
func (c *Config) grace() time.Duration        { return positive(c.Grace, DefaultGrace) }
func (c *Config) writeTimeout() time.Duration { return positive(c.WriteTimeout, DefaultWriteTimeout) }

// positive is d, or def when d is not positive (unset).
func positive(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// command returns the command to exec here: Spec as Launch turns it, in
// the guard when there is one.
func (c *Config) command() (Spec, error) {
	s := c.Spec
	if c.Launch != nil {
		var err error
		if s, err = c.Launch(s); err != nil {
			return Spec{}, err
		}
	}
	if len(c.Guard) > 0 {
		args := append(append(append([]string(nil), c.Guard[1:]...), s.Path), s.Args...)
		s.Path, s.Args = c.Guard[0], args
	}
	return s, nil
}
