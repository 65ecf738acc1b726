package proxy

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// router is the role of reading the client (serveLoop); one goroutine has
// it at a time. A codex-reply to an idle session runs on the router's
// goroutine up to the write of its request to Codex, so that Codex gets it
// without a hand-off to another goroutine (and the wake-up of another
// thread, which costs the request tens of microseconds on a small VM).
// Before anything in the turn waits (a file to read, the child's start or
// stdin, the turn's result: the backend calls TurnRequest.Yield there),
// the goroutine keeps the turn and gives the role to another goroutine
// (handOff), which goes on reading the client: the router still never
// waits for a turn. Once its turn is done, a goroutine that handed the
// role on waits in the server's routerPool for the next hand-off.
type router struct {
	s    *Server
	r    jsonrpcframe.Reader
	done chan<- error // how the reading ended, for Run
	gone bool         // this goroutine has handed the role on
}

// serve reads the client until the end. When this goroutine hands the role
// on, it finishes the work it kept, then waits in the pool to be given the
// role again (and exits when the pool is full or closed).
func (rt *router) serve() {
	var wake chan *router
	for {
		err := rt.s.serveLoop(rt)
		if !rt.gone {
			rt.done <- err
			return
		}
		if wake == nil {
			wake = make(chan *router, 1)
		}
		if !rt.s.routers.park(wake) {
			return
		}
		var ok bool
		if rt, ok = <-wake; !ok {
			return
		}
	}
}

// handOff gives the role to a goroutine from the pool, or to a new one; the
// caller keeps its work. Only the goroutine that has the role may call it
// (a nil router is not the router: nothing happens); a second call does
// nothing.
func (rt *router) handOff() {
	if rt == nil || rt.gone {
		return
	}
	rt.gone = true
	routerHandOffs.Add(1)
	next := &router{s: rt.s, r: rt.r, done: rt.done}
	if wake := rt.s.routers.take(); wake != nil {
		wake <- next
		return
	}
	routerStarts.Add(1)
	go next.serve()
}

// routerHandOffs counts the router's hand-offs, routerStarts the new
// goroutines they started (tests).
var routerHandOffs, routerStarts atomic.Int64

// routerPool holds the goroutines that handed the router role on and have
// finished their turn, for the next hand-off. A goroutine that has run a
// turn has the stack for one: a new goroutine would grow its stack (copy
// it, twice) in the middle of the next turn's request, before Codex gets
// it.
type routerPool struct {
	mu     sync.Mutex
	idle   []chan *router // each parked goroutine's wake-up
	closed bool
}

// maxIdleRouters bounds the pool: one reply at a time needs one goroutine
// parked; more come back when many turns end together, and exit.
const maxIdleRouters = 4

// park adds a goroutine's wake-up channel to the pool; false when the pool
// is full or closed (the goroutine exits instead).
func (p *routerPool) park(wake chan *router) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= maxIdleRouters {
		return false
	}
	p.idle = append(p.idle, wake)
	return true
}

// take removes a parked goroutine's wake-up channel from the pool, or
// returns nil when none is parked. The goroutine is woken by sending it a
// router (it never blocks: the channel has room for one).
func (p *routerPool) take() chan *router {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) == 0 {
		return nil
	}
	wake := p.idle[len(p.idle)-1]
	p.idle = p.idle[:len(p.idle)-1]
	return wake
}

// close ends the parked goroutines and every later park: a channel taken
// before close is still woken by its taker, so no role is lost.
func (p *routerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, wake := range p.idle {
		close(wake)
	}
	p.idle = nil
}

// parked reports how many goroutines wait in the pool (tests).
func (p *routerPool) parked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// routerKey marks the context of a job that runs on the router's goroutine.
type routerKey struct{}

// routerOf returns the router whose goroutine runs the job of ctx, or nil.
func routerOf(ctx context.Context) *router {
	rt, _ := ctx.Value(routerKey{}).(*router)
	return rt
}
