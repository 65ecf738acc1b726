package sshhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
)

// Run runs argv on the host in dir (a path there; "" means the home
// directory there) over the master connection, to its end, with its
// stdin at EOF, and returns its stdout: git, sh, a version check. An exit
// other than 0 is an *Error (wrapping ErrNoDir, ErrNoCommand or ErrSSH
// when that is what happened, and the *childproc exit error) that carries
// what the command and ssh wrote to stderr. When ctx ends first the ssh is
// killed and ctx's error returned. It fails at once, with ErrDown, while
// the connection is down.
func (h *Host) Run(ctx context.Context, dir string, argv []string) ([]byte, error) {
	op := "run " + opName(argv)
	if len(argv) == 0 || argv[0] == "" {
		return nil, h.err(op, "", errors.New("no program"))
	}
	if err := h.ready(op); err != nil {
		return nil, err
	}
	return h.run(ctx, op, remote(runScript, "atm-agent-mcp-run", append([]string{dir}, argv...)...))
}

// run runs the command line on the host over the master connection,
// whatever the state says (the supervisor runs it before Up).
func (h *Host) run(ctx context.Context, op, line string) ([]byte, error) {
	if strings.Contains(line, "\x00") {
		return nil, h.err(op, "", errors.New("an argument holds a NUL byte"))
	}
	out, err := childproc.Output(ctx, childproc.Config{
		Name:        "ssh to host " + h.cfg.Name,
		Spec:        childproc.Spec{Path: h.cfg.ssh(), Args: append(h.muxArgs(), "--", h.cfg.Dest, line)},
		Guard:       h.cfg.Guard,
		StderrLevel: func(string) slog.Level { return slog.LevelDebug },
		Logger:      h.log.With("op", op),
	})
	if err == nil {
		return out, nil
	}
	var ee *childproc.ExitError
	if !errors.As(err, &ee) {
		return out, h.err(op, "", err)
	}
	return out, h.exitErr(op, exitCause(ee), ee)
}

// exitCause is the sentinel of an exit status of a command over ssh.
func exitCause(ee *childproc.ExitError) error {
	switch ee.Status.Code {
	case exitNoDir:
		return ErrNoDir
	case exitNoCommand:
		return ErrNoCommand
	case exitSSH:
		if strings.Contains(ee.Stderr, downMarker) {
			return fmt.Errorf("%w: %w", ErrSSH, ErrDown)
		}
		return ErrSSH
	}
	return errors.New("the command failed")
}

// control runs `ssh -O <op> … <dest>` on the master connection and
// returns its stdout. ssh exits 0 after some failures it reports (a
// forward to cancel that it does not know), so stderr's "failed" is one
// too.
func (h *Host) control(ctx context.Context, op string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.cfg.ssh(), append(append(append(h.muxArgs(), "-O", op), args...), "--", h.cfg.Dest)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	what := strings.TrimSpace(strings.Join(append([]string{op}, args...), " "))
	if err != nil {
		return stdout.String(), h.err("ssh -O "+what, stderr.String(), fmt.Errorf("%w: %w", ErrSSH, err))
	}
	if strings.Contains(stderr.String(), "failed") {
		return stdout.String(), h.err("ssh -O "+what, stderr.String(), ErrSSH)
	}
	return stdout.String(), nil
}

// opName is argv's first two words, as the log and errors name a run.
func opName(argv []string) string {
	if len(argv) > 2 {
		argv = argv[:2]
	}
	return strings.Join(argv, " ")
}
