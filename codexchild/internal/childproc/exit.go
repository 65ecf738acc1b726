package childproc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// The supervisor's sentinels, one set for every child: codexchild and
// codexchild/acp export these very values under their own names, so that
// errors.Is finds them whichever package's error wraps them.
var (
	// ErrExited is wrapped by every *ExitError: the child is not running.
	ErrExited = errors.New("child process is not running")
	// ErrNotJSONRPC is the cause of a child killed because it wrote
	// MaxGarbageRun or more lines in a row on stdout that are not
	// JSON-RPC (Garbage.Err).
	ErrNotJSONRPC = errors.New("child wrote lines that are not JSON-RPC on stdout")
	// ErrStdinBlocked is the cause of a child killed because a write to
	// its stdin could not finish within Config.WriteTimeout.
	ErrStdinBlocked = errors.New("child did not read its stdin")
)

// ExitStatus says how a child died.
type ExitStatus struct {
	Code   int    // exit code, -1 when killed by a signal
	Signal string // signal name ("killed", "terminated"), "" when it exited
	// Reason says why the supervisor killed it ("it wrote 10412 lines in
	// a row that are not JSON-RPC on stdout, and 10000 is the limit"); ""
	// when it did not.
	Reason string
}

// String says how the child died, leading with why when the supervisor
// killed it: "exited with code 3", "killed by signal terminated",
// "stopped: it wrote 10412 lines in a row that are not JSON-RPC on
// stdout, and 10000 is the limit (killed by signal killed)".
func (s ExitStatus) String() string {
	how := fmt.Sprintf("exited with code %d", s.Code)
	if s.Signal != "" {
		how = "killed by signal " + s.Signal
	}
	switch {
	case s.Reason == "":
		return how
	case s.Signal != "":
		return "stopped: " + s.Reason + " (" + how + ")"
	}
	// It exited by itself while the kill was on its way.
	return "stopped: " + s.Reason + " (it " + how + " while it was being killed)"
}

// ExitError reports that a child died: how, its last stderr lines and,
// when the supervisor killed it, why.
type ExitError struct {
	// Child is how messages call the child (Config.Name).
	Child  string
	Status ExitStatus
	// Stderr is the last lines the child wrote to stderr.
	Stderr string
	// Cause is why the supervisor killed the child (its text is
	// Status.Reason; it wraps ErrNotJSONRPC, ErrStdinBlocked or the
	// caller's own cause); nil when it did not.
	Cause error
}

func (e *ExitError) Error() string { return e.Child + " process " + e.Status.String() }

// Unwrap returns ErrExited, and the Cause when there is one.
func (e *ExitError) Unwrap() []error {
	if e.Cause != nil {
		return []error{ErrExited, e.Cause}
	}
	return []error{ErrExited}
}

// Because returns a cause for Process.Kill: text is what messages say
// (Reason, after "because"), and errors.Is finds every one of causes
// through it.
func Because(text string, causes ...error) error {
	return &reason{text: text, causes: causes}
}

type reason struct {
	text   string
	causes []error
}

func (r *reason) Error() string   { return r.text }
func (r *reason) Unwrap() []error { return r.causes }

// exitStatus turns what Wait reported into an ExitStatus.
func exitStatus(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1, Signal: fmt.Sprint(err)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal().String()}
	}
	return ExitStatus{Code: ps.ExitCode()}
}
