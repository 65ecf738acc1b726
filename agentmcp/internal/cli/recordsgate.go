package cli

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Claude Code stops serve with SIGINT, SIGTERM 100 ms later and SIGKILL
// 400 ms after that. What must hold by then is that no session's record
// is left busy: the records are the first thing the shutdown writes. The
// gate makes that an order instead of a race against the clock: after
// the first signal the signal reader reads no other signal until the
// server says its records are written (RecordsWritten), so whatever the
// second signal does, and the log line it writes, comes after them. A
// server that never asks for the gate (tools, a standby) is not waited
// for.

// recordsWait bounds how long the signal reader holds the signals after
// the first one for the records: a registry that cannot be written must
// not keep a person's second Ctrl-C from exiting.
const recordsWait = 2 * time.Second

// gateKey is the context key of the records gate.
type gateKey struct{}

// recordsGate is what RecordsWritten opens.
type recordsGate struct {
	armed atomic.Bool // a server asked for it
	once  sync.Once
	done  chan struct{}
}

// withRecordsGate returns ctx carrying a new gate.
func withRecordsGate(ctx context.Context) (context.Context, *recordsGate) {
	g := &recordsGate{done: make(chan struct{})}
	return context.WithValue(ctx, gateKey{}, g), g
}

// RecordsWritten returns the function a server calls once its sessions'
// final records are written at shutdown; from then on the signal reader
// of ctx (serve's) reads the signals after the first. Without a gate in
// ctx it returns a function that does nothing.
func RecordsWritten(ctx context.Context) func() {
	g, _ := ctx.Value(gateKey{}).(*recordsGate)
	if g == nil {
		return func() {}
	}
	g.armed.Store(true)
	return func() { g.once.Do(func() { close(g.done) }) }
}

// wait holds the signal reader until the records are written, when a
// server asked for the gate; at most recordsWait.
func (g *recordsGate) wait(logger *slog.Logger) {
	if g == nil || !g.armed.Load() {
		return
	}
	t := time.NewTimer(recordsWait)
	defer t.Stop()
	select {
	case <-g.done:
	case <-t.C:
		logger.Warn("the sessions' records were not written in time; reading signals again", "waited", recordsWait)
	}
}
