package workspace

import (
	"context"
	"fmt"
	"time"
)

// CommandResult is how a setup or check command ended.
type CommandResult struct {
	Command string
	// ExitCode is its exit status; -1 when a signal ended it or it could
	// not start.
	ExitCode int
	// Signal names the signal that ended it ("" when it exited).
	Signal   string
	Duration time.Duration
	// Tail is the end of its output (stdout and stderr together), at most
	// TailBytes.
	Tail string
}

// TailBytes is how much of a command's output a CommandResult keeps.
const TailBytes = 4096

// Passed reports whether the command exited with 0.
func (r CommandResult) Passed() bool { return r.ExitCode == 0 && r.Signal == "" }

// Status says how the command ended: "exit status 0", "exit status 2",
// "killed by signal terminated".
func (r CommandResult) Status() string {
	if r.Signal != "" {
		return "killed by signal " + r.Signal
	}
	return fmt.Sprintf("exit status %d", r.ExitCode)
}

// Progress is a report while a long step runs (a merge's check).
type Progress struct {
	// Phase names the step: "commit", "merge", "check", "update".
	Phase   string
	Elapsed time.Duration
	// Line is the last line the check printed, when there is one.
	Line string
}

// progressEvery is how often a running command is reported.
var progressEvery = 2 * time.Second

// runCommand runs command with sh -c in dir (a user's command line from
// configuration: a setup or a check, as Claude Code runs its hooks), its
// environment extended by env, and returns how it ended with the end of
// its output; err is non-nil when it did not exit with 0. While it runs,
// progress (optional) hears of it every progressEvery.
func (m *Manager) runCommand(ctx context.Context, dir, command string, env []string, progress func(Progress)) (CommandResult, error) {
	tail := &tailBuffer{max: TailBytes}
	start := time.Now()
	res := CommandResult{Command: command}
	done := make(chan struct{})
	if progress != nil {
		go func() {
			t := time.NewTicker(progressEvery)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					progress(Progress{Phase: "check", Elapsed: time.Since(start), Line: tail.lastLine()})
				}
			}
		}()
	}
	err := m.git.r.Run(ctx, &Command{Dir: dir, Name: "sh", Args: []string{"-c", command}, Env: env, Stdout: tail, Stderr: tail})
	close(done)
	res.Duration, res.Tail = time.Since(start), tail.String()
	if err != nil {
		res.ExitCode = -1
		if x, ok := asExit(err); ok {
			res.ExitCode, res.Signal = x.Code, x.Signal
		}
		m.log.Info("command failed", "command", command, "dir", dir, "err", err)
		return res, fmt.Errorf("workspace: %q in %s: %w", command, dir, err)
	}
	return res, nil
}
