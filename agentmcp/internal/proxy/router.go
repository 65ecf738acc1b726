package proxy

import (
	"context"
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
// the goroutine keeps the turn and gives the role to a new goroutine
// (handOff), which goes on reading the client: the router still never
// waits for a turn.
type router struct {
	s    *Server
	r    jsonrpcframe.Reader
	done chan<- error // how the reading ended, for Run
	gone bool         // this goroutine has handed the role on
}

// serve reads the client until the end or until this goroutine hands the
// role on.
func (rt *router) serve() {
	err := rt.s.serveLoop(rt)
	if !rt.gone {
		rt.done <- err
	}
}

// handOff gives the role to a new goroutine; the caller keeps its work.
// Only the goroutine that has the role may call it (a nil router is not
// the router: nothing happens); a second call does nothing.
func (rt *router) handOff() {
	if rt == nil || rt.gone {
		return
	}
	rt.gone = true
	routerHandOffs.Add(1)
	next := &router{s: rt.s, r: rt.r, done: rt.done}
	go next.serve()
}

// routerHandOffs counts the router's hand-offs (tests).
var routerHandOffs atomic.Int64

// routerKey marks the context of a job that runs on the router's goroutine.
type routerKey struct{}

// routerOf returns the router whose goroutine runs the job of ctx, or nil.
func routerOf(ctx context.Context) *router {
	rt, _ := ctx.Value(routerKey{}).(*router)
	return rt
}
