package proxy

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// barrier lets n closers through once all n are closing.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
}

// closingBackend is a backend whose Close waits at a barrier with the
// other backends' (or until its ctx ends, which it records).
type closingBackend struct {
	b      *barrier
	mu     sync.Mutex
	closed bool
	gaveUp bool
}

func (c *closingBackend) Turn(context.Context, backend.TurnRequest) (*backend.Result, error) {
	return &backend.Result{Text: "ok"}, nil
}
func (c *closingBackend) Interrupt(context.Context, string) error { return nil }
func (c *closingBackend) Status() backend.Status                  { return backend.Status{} }

func (c *closingBackend) Close(ctx context.Context) error {
	c.b.mu.Lock()
	c.b.arrived++
	if c.b.arrived == c.b.n {
		close(c.b.all)
	}
	c.b.mu.Unlock()
	select {
	case <-c.b.all:
	case <-ctx.Done():
		c.mu.Lock()
		c.gaveUp = true
		c.mu.Unlock()
		return ctx.Err()
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

// TestCloseBackendsAtOnce: at shutdown the backend of every agent kind,
// Codex's and each ACP agent's, is closing at the same time within one
// budget: each Close here returns only once all are closing, which one
// after another would never reach (each would give up when the budget
// ends).
func TestCloseBackendsAtOnce(t *testing.T) {
	b := &barrier{n: 4, all: make(chan struct{})}
	codexChild := &closingBackend{b: b}
	agents := map[string]backend.Backend{"claude": &closingBackend{b: b}, "gemini": &closingBackend{b: b}, "mock": &closingBackend{b: b}}
	log := slog.New(slog.DiscardHandler)
	s := &Server{opts: Options{Agents: agents}, log: log, backend: newCodex(codexChild, Options{}, log, nil)}
	s.closeBackends(30 * time.Second)
	all := []*closingBackend{codexChild}
	for _, a := range agents {
		all = append(all, a.(*closingBackend))
	}
	for i, c := range all {
		c.mu.Lock()
		if !c.closed || c.gaveUp {
			t.Errorf("backend %d: closed %v, gave up %v; want every backend closed together", i, c.closed, c.gaveUp)
		}
		c.mu.Unlock()
	}
}
