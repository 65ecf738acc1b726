//go:build unix

package registry

import (
	"errors"
	"syscall"
)

// signalAlive reports whether a process with pid exists (signal 0; EPERM:
// it exists, under another user).
func signalAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
