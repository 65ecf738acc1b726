package proxy

import (
	"context"
	"sync"
	"time"
)

// owned is a set of goroutines that one owner joins: the notifications
// passed on to Codex (handler.Notify) and the lead's pushes (leadPush).
// Go starts one unless the owner has stopped the set; stop refuses new
// ones, gives those running a grace to end by themselves, then ends their
// context and waits for them. mu guards closed, so that no Add follows the
// Wait; a leaf held around nothing else.
type owned struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

func newOwned() *owned {
	ctx, cancel := context.WithCancel(context.Background())
	return &owned{ctx: ctx, cancel: cancel}
}

// Go runs f on a goroutine of its own with the set's context, which ends
// when stop gives up waiting; it reports false, and runs nothing, once the
// set has stopped.
func (o *owned) Go(f func(ctx context.Context)) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.wg.Go(func() { f(o.ctx) })
	return true
}

// stop refuses new goroutines and waits for the running ones: up to grace
// for them to end by themselves, then with their context ended. It
// reports whether they all ended within the grace.
func (o *owned) stop(grace time.Duration) bool {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		o.cancel()
		return true
	case <-t.C:
	}
	o.cancel()
	<-done
	return false
}
