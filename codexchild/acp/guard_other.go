//go:build !linux

package acp

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal does nothing: only Linux has a parent-death signal;
// the guard watches its parent instead.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// startFromLastingThread is cmd.Start: no thread matters without a
// parent-death signal.
func startFromLastingThread(cmd *exec.Cmd) error { return cmd.Start() }
