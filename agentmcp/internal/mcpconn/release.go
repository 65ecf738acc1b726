package mcpconn

import "sync"

// reader is the role of reading the client; one goroutine has it at a
// time. A tools/call runs on the reader's goroutine (Handler.CallTool), so
// that a reply to an idle session reaches Codex without a hand-off to
// another goroutine (and the wake-up of another thread, which costs the
// request tens of microseconds on a small machine). Before anything in the
// call waits, the goroutine keeps the call and gives the role to another
// goroutine (ToolCall.Release), which goes on reading the client: reading
// never waits for a call. Once its call is done, a goroutine that gave the
// role away waits in the Conn's pool for the next hand-off.
type reader struct {
	c *Conn
}

// serve reads the client until the end. When this goroutine gives the role
// away, it finishes the call it kept, then waits in the pool to be given
// the role again (and exits when the pool is full or closed).
func (rd *reader) serve() {
	var wake chan *reader
	for {
		err, kept := rd.c.readLoop(rd)
		if kept {
			rd.c.readDone <- err
			return
		}
		if wake == nil {
			wake = make(chan *reader, 1)
		}
		if !rd.c.pool.park(wake) {
			return
		}
		var ok bool
		if rd, ok = <-wake; !ok {
			return
		}
	}
}

// handOff gives the role to a goroutine from the pool, or to a new one;
// the caller keeps its call. Only the call holding the role calls it, once
// (ToolCall.Release).
func (rd *reader) handOff() {
	next := &reader{c: rd.c}
	if wake := rd.c.pool.take(); wake != nil {
		wake <- next
		return
	}
	go next.serve()
}

// pool holds the goroutines that gave the reading role away and have
// finished their call, for the next hand-off. A goroutine that has run a
// turn has the stack for one: a new goroutine would grow its stack (copy
// it, twice) in the middle of the next turn's request, before Codex gets
// it.
type pool struct {
	mu     *sync.Mutex    // the Conn's: guards idle and closed
	idle   []chan *reader // each parked goroutine's wake-up
	closed bool
}

// maxIdle bounds the pool: one reply at a time needs one goroutine parked;
// more come back when many turns end together, and exit.
const maxIdle = 4

// park adds a goroutine's wake-up channel to the pool; false when the pool
// is full or closed (the goroutine exits instead).
func (p *pool) park(wake chan *reader) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= maxIdle {
		return false
	}
	p.idle = append(p.idle, wake)
	return true
}

// take removes a parked goroutine's wake-up channel from the pool, or
// returns nil when none is parked. The goroutine is woken by sending it a
// reader (it never blocks: the channel has room for one).
func (p *pool) take() chan *reader {
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
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, wake := range p.idle {
		close(wake)
	}
	p.idle = nil
}
