package childproc

import (
	"errors"
	"io/fs"
	"os/exec"
)

// ExecFailed reports whether err, from starting a process, says the
// program could not be executed (missing, not a file, not executable).
func ExecFailed(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)
}

// ExecDetail is what the exec said in err, a failed start: the
// *exec.Error or *fs.PathError under the supervisor's wrapping.
func ExecDetail(err error) string {
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
