package backend

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotFound is wrapped by *NotFoundError: a child's program could not be
// run at all (not on PATH, no such file, not executable, or an interpreter
// it needs is missing), so no restart helps until it is installed or the
// configuration points at it.
var ErrNotFound = errors.New("program not found")

// NotFoundError reports a child's program that could not be run: the start
// error of an unguarded child whose exec failed, or the NotFound of the
// *ExitError of a child that exited with code 127 before its handshake
// (the guard, or a wrapper script such as Codex's node launcher, could not
// exec it). errors.Is(err, ErrNotFound) finds it either way.
type NotFoundError struct {
	// Bin is the program: a name looked up in PATH, or a path.
	Bin string
	// Program is what Bin is, as the message says it ("codex binary",
	// "command"). optional: "" means "program".
	Program string
	// Path is the PATH the child was started with.
	Path string
	// Detail is what the exec said ("exec: \"codex\": executable file not
	// found in $PATH"), or the child's last stderr line.
	Detail string
}

func (e *NotFoundError) Error() string {
	program := e.Program
	if program == "" {
		program = "program"
	}
	var where string
	if strings.ContainsRune(e.Bin, '/') {
		where = fmt.Sprintf("%s %q cannot be run", program, e.Bin)
	} else {
		where = fmt.Sprintf("%s %q was not found on PATH (PATH=%s)", program, e.Bin, e.Path)
	}
	if e.Detail != "" {
		where += ": " + e.Detail
	}
	return where
}

// Unwrap returns ErrNotFound.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }
