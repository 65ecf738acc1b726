package codexchild

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
)

// ErrNotFound is wrapped by *NotFoundError: the Codex binary could not be
// run at all (not on PATH, no such file, not executable, or an interpreter
// it needs is missing), so no restart helps until it is installed or
// Config.Bin points at it.
var ErrNotFound = errors.New("codex binary not found")

// notFoundCode is the exit code of a command that could not be executed
// (the shells' convention, and the guard's when its exec fails).
const notFoundCode = 127

// NotFoundError reports a Codex binary that could not be run. It is the
// start error of an unguarded child whose exec failed, and the NotFound of
// the *ExitError of a child that exited with code 127 before its handshake
// (the guard, or a wrapper script such as Codex's node launcher, could not
// exec it). errors.Is(err, ErrNotFound) finds it either way.
type NotFoundError struct {
	// Bin is Config.Bin: a name looked up in PATH, or a path.
	Bin string
	// Program is what Bin is, as the message says it. optional: "" means
	// "codex binary"; an ACP agent's is "command".
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
		program = "codex binary"
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

// execFailed reports whether err, from starting a process, says the
// program could not be executed (missing, not a file, not executable).
func execFailed(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)
}

// execDetail is what the exec said in err, a failed start: the
// *exec.Error or *fs.PathError under the supervisor's wrapping.
func execDetail(err error) string {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Error()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return err.Error()
}

// notFound is the *NotFoundError of cfg's binary with detail.
func notFound(cfg Config, detail string) *NotFoundError {
	return &NotFoundError{Bin: cfg.Bin, Path: envValue(cfg.env(), "PATH"), Detail: detail}
}

// notFoundAtStart returns the *NotFoundError of a child that exited before
// its handshake with ee, or nil when ee does not say that the binary could
// not be run: exit code 127 (the guard's when its exec failed: its stderr
// line "guard: exec: …" is the detail; else the child's last stderr line).
func notFoundAtStart(cfg Config, ee *ExitError) *NotFoundError {
	if ee == nil || ee.Status.Code != notFoundCode || ee.Status.Signal != "" || ee.Reason != "" {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(ee.Stderr), "\n")
	detail := strings.TrimSpace(lines[len(lines)-1])
	for _, l := range lines {
		if g, ok := strings.CutPrefix(strings.TrimSpace(l), "guard: "); ok {
			detail = g
		}
	}
	return notFound(cfg, detail)
}

// envValue returns the last value of key in env ("" when unset), as
// exec.Cmd uses it.
func envValue(env []string, key string) string {
	var v string
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
