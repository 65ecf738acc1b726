package sshhost

import (
	"errors"
	"strings"
)

// The sentinels underneath the errors of a Host, for errors.Is.
var (
	// ErrDown: the host's master connection is not up (not yet, or lost
	// and not yet made again).
	ErrDown = errors.New("the ssh connection is down")
	// ErrClosed: the Host was closed.
	ErrClosed = errors.New("host closed")
	// ErrSSH: ssh itself failed (it exited with 255: it could not connect,
	// authenticate, or reach the master connection).
	ErrSSH = errors.New("ssh failed")
	// ErrNoDir: the working directory asked for does not exist on the
	// host (the wrapper exited with 125).
	ErrNoDir = errors.New("no such directory on the host")
	// ErrNoCommand: the program asked for is not on the host (the shell
	// exited with 127).
	ErrNoCommand = errors.New("no such command on the host")
)

// Exit codes of the wrappers on the host (and of ssh).
const (
	exitWrapper   = 124 // the wrapper could not set up (environment, pid file)
	exitNoDir     = 125 // the directory is missing
	exitNoCommand = 127 // the shell found no such command
	exitSSH       = 255 // ssh's own failure
)

// stderrLines is how many of the last stderr lines an Error shows.
const stderrLines = 5

// Error is an error of an operation on a host: it names the host and the
// operation, and carries what ssh (and the command on the host) said last
// on stderr.
type Error struct {
	// Host is the host's name (Config.Name).
	Host string
	// Op is what was done: "connect", "run git status", "forward to
	// 127.0.0.1:8080", "reap".
	Op string
	// Stderr is the last lines ssh and the command wrote to stderr; ""
	// when none.
	Stderr string
	// Err is what went wrong: wraps ErrDown, ErrSSH, ErrNoDir … and the
	// cause underneath (an exit error, a context's error).
	Err error
}

// Error says `host "box": run git status: <err>: <stderr lines>`.
func (e *Error) Error() string {
	s := "host " + quoteName(e.Host) + ": " + e.Op + ": " + e.Err.Error()
	if said := lastLines(e.Stderr, stderrLines); said != "" {
		s += ": " + said
	}
	return s
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

func quoteName(name string) string { return `"` + name + `"` }

// lastLines returns the last n non-empty lines of s joined with " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
