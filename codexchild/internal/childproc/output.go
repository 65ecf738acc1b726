package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
)

// Output runs cfg's command to its end, as exec.Cmd.Output does, under
// the same supervision as Start: its own process group, its stdin at EOF,
// its stderr to the log, and whatever of its group is left killed once it
// has exited. When ctx ends first the group is killed (SIGKILL) and ctx's
// error returned. It returns the command's stdout; an exit other than 0 is
// an *ExitError.
func Output(ctx context.Context, cfg Config) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	p.stdin.Close()
	stop := context.AfterFunc(ctx, func() {
		p.log.Info(p.name+" killed: its context ended", "err", context.Cause(ctx))
		_ = signalGroup(p.cmd, syscall.SIGKILL)
	})
	out, rerr := io.ReadAll(p.Stdout())
	p.StdoutDone()
	<-p.Done()
	if !stop() {
		return nil, ctx.Err()
	}
	if ee := p.Err(); ee.Status != (ExitStatus{}) {
		return out, ee
	}
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		return out, fmt.Errorf("read stdout: %w", rerr)
	}
	return out, nil
}
