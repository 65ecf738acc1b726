// Package guard is the small process that stands between the proxy and its
// Codex child, so that nothing of Codex outlives the proxy, however the
// proxy ends (SIGKILL, the OOM killer, a crash).
//
// The proxy starts the guard in a process group of its own, with a
// parent-death signal on Linux (codexchild does this when Config.Guard is
// set). The guard starts Codex in the same group with the same stdin,
// stdout and stderr, and waits for it:
//
//   - Codex exits: the guard exits the same way (the same code, or the same
//     signal), so the proxy sees Codex's own exit status.
//   - The proxy dies: the kernel sends the guard ParentDeathSignal (Linux),
//     or the guard sees its parent change (checked every PollInterval
//     elsewhere, and on Linux too in case the signal was missed). It kills
//     the whole group with SIGKILL: Codex, Codex's node wrapper, the shells
//     and the per-thread tools servers it started.
//   - SIGTERM or SIGINT to the group (the proxy's graceful stop): the guard
//     ignores them and waits for Codex to exit.
//
// A binary offers the guard as a subcommand by calling Main with the rest
// of its arguments.
package guard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// ParentDeathSignal is the signal the guard expects from the kernel when
// its parent dies (codexchild sets it as the guard's parent-death signal).
const ParentDeathSignal = syscall.SIGUSR2

// PollInterval is how often the guard checks that its parent is alive.
const PollInterval = 250 * time.Millisecond

// Main runs the guard: args are the Codex command and its arguments. It
// returns Codex's exit code; when Codex died of a signal, the guard dies of
// the same signal and does not return.
func Main(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "guard: no command to run")
		return 2
	}
	parent := os.Getppid()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, ParentDeathSignal, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getppid() != parent || parent == 1 {
		killGroup() // the proxy died before the guard could watch it
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "guard: %v\n", err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return exitLike(err)
		case s := <-sigs:
			if s == ParentDeathSignal {
				killGroup()
			}
			// SIGTERM, SIGINT, SIGHUP: Codex has them too; wait for it.
		case <-tick.C:
			if os.Getppid() != parent {
				killGroup()
			}
		}
	}
}

// killGroup kills the guard's process group, the guard included.
func killGroup() {
	_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
	os.Exit(137) // not reached: SIGKILL reached this process too
}

// exitLike returns the exit code of Codex's end, or dies of the signal that
// ended Codex.
func exitLike(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		fmt.Fprintf(os.Stderr, "guard: %v\n", err)
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // the signal ends the process, unless Go ignores it
		return 128 + int(sig)
	}
	return ee.ExitCode()
}
