//go:build !linux

package childproc

import (
	"os/exec"
	"syscall"
)

// SetParentDeathSignal does nothing: only Linux has a parent-death signal;
// the guard watches its parent instead.
func SetParentDeathSignal(*syscall.SysProcAttr) {}

// StartFromLastingThread is cmd.Start: no thread matters without a
// parent-death signal.
func StartFromLastingThread(cmd *exec.Cmd) error { return cmd.Start() }
