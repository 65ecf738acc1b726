//go:build !unix

package realcodex

import (
	"os"
	"os/exec"
)

func setGroup(*exec.Cmd) {}

func terminateGroup(cmd *exec.Cmd) { _ = cmd.Process.Signal(os.Interrupt) }

func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
