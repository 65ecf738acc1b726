package mcpconn

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// outbox is the connection's writing side. It owns the only writer to the
// client's stream (stdout): responses and server→client requests are
// written directly (the writer serialises them) and may wait for the
// client. Events and progress never wait for the client (FR-19.3): the
// goroutine that has one (the Codex reader) writes it itself when the
// client's pipe has room for it and no other event is waiting, else it goes
// to a bounded queue that one goroutine drains, and a full queue drops it
// instead of blocking Codex (FR-19.4). Progress is written under omu, so
// that none follows its request's response (progress.go).
//
// The Codex reader may hold its events back instead (event with hold) and
// write those it has in one write once it has read all Codex has written
// so far (flushHeld, from codexchild's Flusher call): a burst of events
// costs one system call and one wake-up of the client, not one each, and no
// event waits while the reader has nothing else to do. Held events go out
// before anything else: other events queue behind them, and a direct write
// (a response) takes them along, in front of itself, in the same write. A
// flush that finds a direct write under way (it may be waiting for the
// client) does not wait for it: the held events join the front of the
// queue, as events do when the client is behind.
type outbox struct {
	w   jsonrpcframe.Writer
	log *slog.Logger

	gone atomic.Bool // stdin closed or stdout broken: drop events, fail requests

	// gauge tells whether the client's pipe takes an event without
	// blocking (nil when that cannot be known: every event is queued).
	gauge *pipeGauge

	// Locks: omu before emu. Neither is taken with the Conn's mu held;
	// omu is held while reserve's caller (TryReplyNow) takes the Conn's mu
	// and runs its commit, which takes the caller's own locks (in the
	// proxy: session's Session.mu, then persister.mu): omu before those,
	// and no caller holds one of them when it takes omu.
	emu      sync.Mutex // guards queue, writing, held, heldSize, spare, nextID and pending
	nextID   int64      // the last server→client request id
	pending  map[jsonrpcframe.ID]chan *jsonrpcframe.Message
	queue    []outItem // events and progress waiting for the pump, in order
	queueMax int
	writing  bool // an event write is in progress (pump or inline)
	held     []*jsonrpcframe.Message
	heldSize int                     // what the held events take in the pipe, about
	spare    []*jsonrpcframe.Message // the last written held slice, for reuse
	// bw writes held events in one write (nil when the writer cannot:
	// events are then never held).
	bw jsonrpcframe.BatchWriter
	// omu orders the writes that take held events along against each other,
	// so that no response overtakes events held before it, and progress
	// against its response. It is held across a direct write, which may
	// wait for the client: whatever the Codex reader calls takes it only
	// with TryLock.
	omu      sync.Mutex
	wake     chan struct{} // tells the pump there is work
	stopPump chan struct{}
	pumpDone chan struct{}
	dropped  atomic.Int64 // events dropped
	// progressDropped counts progress notifications dropped.
	progressDropped atomic.Int64
	// lastWarn (unix nanoseconds) and warned (dropped then) rate-limit the
	// warning about dropped events.
	lastWarn, warned atomic.Int64
}

// dropWarnEvery is how often, at most, the log says events were dropped.
const dropWarnEvery = 10 * time.Second

// warnDrops logs, at most every dropWarnEvery, that the client reads slower
// than Codex writes and how many events were dropped since the last time.
func (c *outbox) warnDrops() {
	now := time.Now().UnixNano()
	last := c.lastWarn.Load()
	if last != 0 && now-last < int64(dropWarnEvery) || !c.lastWarn.CompareAndSwap(last, now) {
		return
	}
	total := c.dropped.Load()
	c.log.Warn("the client reads slower than Codex writes: events dropped (agent_status counts them per session)",
		"dropped", total-c.warned.Swap(total), "dropped_total", total, "progress_dropped_total", c.progressDropped.Load(), "queue", c.queueMax)
}

// ErrClientGone reports that the client has disconnected: its stdin ended
// or its stdout broke.
var ErrClientGone = errors.New("mcp client disconnected")

// newOutbox returns the outbox writing to w; gauge (nil when unknown)
// measures the pipe w writes to. queue bounds the event queue.
func newOutbox(w jsonrpcframe.Writer, gauge *pipeGauge, queue int, log *slog.Logger) *outbox {
	if queue <= 0 {
		queue = 1024
	}
	c := &outbox{
		w:        w,
		log:      log,
		pending:  map[jsonrpcframe.ID]chan *jsonrpcframe.Message{},
		gauge:    gauge,
		queueMax: queue,
		wake:     make(chan struct{}, 1),
		stopPump: make(chan struct{}),
		pumpDone: make(chan struct{}),
	}
	c.bw, _ = w.(jsonrpcframe.BatchWriter)
	go c.pump()
	return c
}

// heldOverhead is what an event takes in the pipe beyond its params, at
// most (method, _meta, framing), for counting held events against the
// pipe's room.
const heldOverhead = 256

// inlineSlack is the room an inline event write leaves in the client's
// pipe beyond the event itself: a framing header and the pipe's partly
// read page, with a margin for a response written at the same moment.
const inlineSlack = 16 << 10

// signalLocked wakes the pump; c.emu is held.
func (c *outbox) signalLocked() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// markGone records that the client cannot be written to any more.
func (c *outbox) markGone(err error) {
	if c.gone.CompareAndSwap(false, true) && err != nil {
		c.log.Warn("mcp client write failed; dropping further output", "err", err)
	}
	c.emu.Lock()
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	clear(c.queue) // queued and held events are dropped
	c.queue = c.queue[:0]
	clear(c.held)
	c.held, c.heldSize = c.held[:0], 0
	c.emu.Unlock()
}

// isGone reports whether the client has disconnected.
func (c *outbox) isGone() bool { return c.gone.Load() }

// close stops the event pump; queued events are dropped. A pump stuck
// writing to a client that no longer reads is abandoned after a second (the
// process is about to exit); shutdown never hangs on it.
func (c *outbox) close() {
	c.markGone(nil)
	select {
	case <-c.stopPump:
	default:
		close(c.stopPump)
	}
	select {
	case <-c.pumpDone:
	case <-time.After(time.Second):
		c.log.Warn("the mcp client stopped reading; abandoning undelivered output")
	}
}

// write writes m directly, after any held events (in the same write).
func (c *outbox) write(m *jsonrpcframe.Message) error {
	if c.isGone() {
		return ErrClientGone
	}
	c.omu.Lock()
	defer c.omu.Unlock()
	return c.writeOrdered(m)
}

// writeOrdered is write with c.omu held.
func (c *outbox) writeOrdered(m *jsonrpcframe.Message) error {
	c.emu.Lock()
	held := c.takeHeldLocked()
	c.emu.Unlock()
	var err error
	if len(held) > 0 {
		err = c.writeHeld(held, m)
	} else {
		err = c.w.Write(m)
	}
	if err != nil {
		c.markGone(err)
		return err
	}
	return nil
}

// flushHeld writes the held events, if any, in one write. The Codex reader
// calls it when it has read all Codex has written so far, so it never
// waits: with nothing held it returns at once (omu untouched), and while a
// direct write holds omu (it may be waiting for the client) the held events
// go to the front of the queue, for the pump, instead. The held events fit
// in the client's pipe (event counted them against its room), so their own
// write does not wait.
func (c *outbox) flushHeld() {
	c.emu.Lock()
	empty := len(c.held) == 0
	c.emu.Unlock()
	if empty {
		return
	}
	if !c.omu.TryLock() {
		c.emu.Lock()
		c.queueHeldLocked()
		c.emu.Unlock()
		return
	}
	defer c.omu.Unlock()
	c.emu.Lock()
	held := c.takeHeldLocked()
	c.emu.Unlock()
	if len(held) == 0 {
		return
	}
	if err := c.writeHeld(held, nil); err != nil {
		c.markGone(err)
	}
}

// queueHeldLocked moves the held events to the front of the queue (they
// are older than anything queued) and wakes the pump; c.emu is held.
func (c *outbox) queueHeldLocked() {
	held := c.takeHeldLocked()
	if len(held) == 0 {
		return
	}
	front := make([]outItem, 0, len(held)+len(c.queue))
	for _, h := range held {
		front = append(front, outItem{build: func() *jsonrpcframe.Message { return h }})
	}
	c.queue = append(front, c.queue...)
	c.signalLocked()
}

// takeHeldLocked takes the held events for writing; c.emu is held.
func (c *outbox) takeHeldLocked() []*jsonrpcframe.Message {
	if len(c.held) == 0 {
		return nil
	}
	held := c.held
	c.held, c.spare, c.heldSize = c.spare[:0], nil, 0
	return held
}

// writeHeld writes held events taken by takeHeldLocked, and m after them
// when not nil, in one write; c.omu is held. Then events queued behind the
// held ones may go.
func (c *outbox) writeHeld(held []*jsonrpcframe.Message, m *jsonrpcframe.Message) error {
	if m != nil {
		held = append(held, m)
	}
	err := c.bw.WriteBatch(held)
	clear(held)
	c.emu.Lock()
	defer c.emu.Unlock()
	if c.spare == nil {
		c.spare = held[:0]
	}
	if len(c.queue) > 0 {
		c.signalLocked()
	}
	return err
}

// reply sends a successful response.
func (c *outbox) reply(id jsonrpcframe.ID, result any) {
	m, err := jsonrpcframe.NewResponse(id, result)
	if err != nil {
		c.replyError(id, proxyerr.New(proxyerr.ErrInternal, nil, "encode result: %v", err))
		return
	}
	if err := c.write(m); err != nil {
		c.log.Debug("reply not delivered", "id", id.String(), "err", err)
	}
}

// replyError sends an error response.
func (c *outbox) replyError(id jsonrpcframe.ID, err error) {
	if werr := c.write(jsonrpcframe.NewErrorResponse(id, proxyerr.ToWire(err))); werr != nil {
		c.log.Debug("error reply not delivered", "id", id.String(), "err", werr)
	}
}

// notify writes a notification directly.
func (c *outbox) notify(method string, params any) error {
	m, err := jsonrpcframe.NewNotification(method, params)
	if err != nil {
		return err
	}
	return c.write(m)
}

// event sends a notification built by build, without ever waiting for the
// client: it is written at once, by the caller, when nothing is queued and
// the client's pipe has room for it; else it is queued and built by the
// pump. With hold (the Codex reader, which calls flushHeld when it runs out
// of output) an event that would be written at once is held instead, to go
// out with the events after it. It reports false when the event was dropped
// (queue full or client gone).
func (c *outbox) event(build func() *jsonrpcframe.Message, hold bool) bool {
	if c.isGone() {
		c.dropped.Add(1)
		return false
	}
	hold = hold && c.bw != nil
	c.emu.Lock()
	if c.gauge == nil || c.writing || len(c.queue) > 0 || !hold && len(c.held) > 0 {
		ok := c.enqueueLocked(build)
		c.emu.Unlock()
		if !ok {
			c.warnDrops()
		}
		return ok
	}
	c.writing = true
	heldSize := c.heldSize
	c.emu.Unlock()

	m := build()
	inline := m == nil
	if m != nil && c.gauge.has(heldSize+len(m.Params)+heldOverhead+inlineSlack) {
		inline = true
		if hold {
			c.emu.Lock()
			c.held = append(c.held, m)
			c.heldSize += len(m.Params) + heldOverhead
			c.writing = false
			full := len(c.held) >= maxEventBatch
			c.emu.Unlock()
			if full {
				c.flushHeld()
			}
			return true
		}
		if err := c.w.Write(m); err != nil {
			c.markGone(err)
		}
	}
	c.emu.Lock()
	defer c.emu.Unlock()
	c.writing = false
	if !inline {
		// No room: the client is behind. The pump waits for it; the held
		// events and this one go before any queued while it was being
		// built.
		front := make([]outItem, 0, len(c.held)+1+len(c.queue))
		for _, h := range c.takeHeldLocked() {
			front = append(front, outItem{build: func() *jsonrpcframe.Message { return h }})
		}
		front = append(front, outItem{build: func() *jsonrpcframe.Message { return m }})
		c.queue = append(front, c.queue...)
		c.signalLocked()
	} else if len(c.queue) > 0 {
		c.signalLocked()
	}
	return true
}

// reserve claims the client's pipe for one message of about n bytes if it
// takes it at once, without waiting for anything: omu is free (no direct
// write is under way), no event is queued or being written, and the pipe
// has room for it after the held events. The caller then calls
// writeReserved (which writes the held events first); events meanwhile go
// to the queue. omu stays held from a true reserve to writeReserved (so
// that no other direct write takes the room); whatever the caller does in
// between takes its locks after omu (see the outbox's Locks).
func (c *outbox) reserve(n int) bool {
	if c.isGone() || !c.omu.TryLock() {
		return false
	}
	c.emu.Lock()
	defer c.emu.Unlock()
	if c.gauge == nil || c.writing || len(c.queue) > 0 || !c.gauge.has(c.heldSize+n+inlineSlack) {
		c.omu.Unlock()
		return false
	}
	c.writing = true
	return true
}

// writeReserved writes m in the room reserve claimed (omu held), then
// releases both.
func (c *outbox) writeReserved(m *jsonrpcframe.Message) {
	if err := c.writeOrdered(m); err != nil {
		c.log.Debug("reply not delivered", "id", m.ID.String(), "err", err)
	}
	c.omu.Unlock()
	c.release()
}

// release gives up a reservation.
func (c *outbox) release() {
	c.emu.Lock()
	defer c.emu.Unlock()
	c.writing = false
	if len(c.queue) > 0 {
		c.signalLocked()
	}
}

// queued returns how many events wait for the pump.
func (c *outbox) queued() int {
	c.emu.Lock()
	defer c.emu.Unlock()
	return len(c.queue)
}

// enqueueLocked queues an event for the pump, or drops it when the queue is
// full; c.emu is held.
func (c *outbox) enqueueLocked(build func() *jsonrpcframe.Message) bool {
	if len(c.queue) >= c.queueMax {
		c.dropped.Add(1)
		return false
	}
	c.queue = append(c.queue, outItem{build: build})
	c.signalLocked()
	return true
}
