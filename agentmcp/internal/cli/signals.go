package cli

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// What a signal does to a server (signalAction).
type signalStep int

const (
	stepShutdown signalStep = iota // the first: start the graceful shutdown
	stepGoOn                       // the other kind, once: the same shutdown goes on
	stepExit                       // a repeat: exit at once
)

// signalAction says what sig does after the signals seen before it (in
// order). Claude Code stops a stdio server with SIGINT, then SIGTERM 100 ms
// later, then SIGKILL 400 ms after that (notes: claude-code.md): its
// SIGTERM after SIGINT is the same request, escalated, so it lets the
// shutdown already under way go on. A signal of a kind already seen (a
// person's second Ctrl-C, a second SIGTERM), or a third, exits at once:
// what was written stays valid.
func signalAction(seen []os.Signal, sig os.Signal) signalStep {
	switch {
	case len(seen) == 0:
		return stepShutdown
	case len(seen) == 1 && seen[0] != sig:
		return stepGoOn
	}
	return stepExit
}

// notifyShutdown returns a context cancelled by the first SIGINT or
// SIGTERM (the graceful shutdown, FR-7); later signals act as signalAction
// says: the exit at once re-raises the signal with its default action, so
// the process ends by it. They are read only once the server's records
// are written (RecordsWritten, recordsgate.go). stop releases the signals.
func notifyShutdown(logger *slog.Logger) (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, gate := withRecordsGate(context.Background())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		var seen []os.Signal
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				switch signalAction(seen, sig) {
				case stepShutdown:
					logger.Info("shutdown requested", "signal", sig.String())
					cancel()
					gate.wait(logger)
				case stepGoOn:
					logger.Info("signal during the shutdown: the same shutdown goes on (Claude Code sends SIGTERM 100 ms after SIGINT); "+
						"a repeated signal exits at once", "signal", sig.String())
				default:
					logger.Warn("signal repeated during the shutdown: exiting at once", "signal", sig.String())
					signal.Reset(sig)
					if s, ok := sig.(syscall.Signal); ok {
						_ = syscall.Kill(os.Getpid(), s)
					}
					return
				}
				seen = append(seen, sig)
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
