package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// client is the upstream MCP connection (Claude). It owns the only writer
// to stdout: responses, server→client requests and progress are written
// directly (the writer serialises them); events go through a bounded queue
// drained by one goroutine, so a slow client never delays request/response
// traffic and a full queue drops events instead of blocking Codex.
type client struct {
	w   jsonrpcframe.Writer
	log *slog.Logger

	mu      sync.Mutex
	nextID  int64
	pending map[jsonrpcframe.ID]chan *jsonrpcframe.Message
	gone    bool // stdin closed or stdout broken: drop events, fail requests

	events   chan func() *jsonrpcframe.Message
	stopPump chan struct{}
	pumpDone chan struct{}
	dropped  atomic.Int64

	// Set by initialize.
	elicitation     atomic.Bool
	protocolVersion atomic.Value // string
}

// errClientGone reports that the client has disconnected.
var errClientGone = errors.New("mcp client disconnected")

func newClient(w jsonrpcframe.Writer, queue int, log *slog.Logger) *client {
	if queue <= 0 {
		queue = 1024
	}
	c := &client{
		w:        w,
		log:      log,
		pending:  map[jsonrpcframe.ID]chan *jsonrpcframe.Message{},
		events:   make(chan func() *jsonrpcframe.Message, queue),
		stopPump: make(chan struct{}),
		pumpDone: make(chan struct{}),
	}
	go c.pump()
	return c
}

// maxEventBatch bounds how many queued events the pump writes at once.
const maxEventBatch = 64

// pump writes queued events until stop. Events that are already queued go
// out together, in one write, when the writer can batch.
func (c *client) pump() {
	defer close(c.pumpDone)
	bw, canBatch := c.w.(jsonrpcframe.BatchWriter)
	batch := make([]*jsonrpcframe.Message, 0, maxEventBatch)
	for {
		select {
		case build := <-c.events:
			batch = batch[:0]
			if m := build(); m != nil {
				batch = append(batch, m)
			}
		drain:
			for canBatch && len(batch) < maxEventBatch {
				select {
				case build := <-c.events:
					if m := build(); m != nil {
						batch = append(batch, m)
					}
				default:
					break drain
				}
			}
			var err error
			switch {
			case len(batch) == 0:
			case canBatch:
				err = bw.WriteBatch(batch)
			default:
				err = c.w.Write(batch[0])
			}
			if err != nil {
				c.markGone(err)
			}
		case <-c.stopPump:
			return
		}
	}
}

// markGone records that the client cannot be written to any more.
func (c *client) markGone(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gone {
		c.gone = true
		if err != nil {
			c.log.Warn("mcp client write failed; dropping further output", "err", err)
		}
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
	}
}

// isGone reports whether the client has disconnected.
func (c *client) isGone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

// close stops the event pump; queued events are dropped. A pump stuck
// writing to a client that no longer reads is abandoned after a second (the
// process is about to exit); shutdown never hangs on it.
func (c *client) close() {
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

func (c *client) write(m *jsonrpcframe.Message) error {
	if c.isGone() {
		return errClientGone
	}
	if err := c.w.Write(m); err != nil {
		c.markGone(err)
		return err
	}
	return nil
}

// reply sends a successful response.
func (c *client) reply(id jsonrpcframe.ID, result any) {
	m, err := jsonrpcframe.NewResponse(id, result)
	if err != nil {
		c.replyError(id, newError(ErrInternal, nil, "encode result: %v", err))
		return
	}
	if err := c.write(m); err != nil {
		c.log.Debug("reply not delivered", "id", id.String(), "err", err)
	}
}

// replyError sends an error response.
func (c *client) replyError(id jsonrpcframe.ID, err error) {
	if werr := c.write(jsonrpcframe.NewErrorResponse(id, toRPCError(err))); werr != nil {
		c.log.Debug("error reply not delivered", "id", id.String(), "err", werr)
	}
}

// notify writes a notification directly (used for progress, which must
// precede the response it belongs to).
func (c *client) notify(method string, params any) error {
	m, err := jsonrpcframe.NewNotification(method, params)
	if err != nil {
		return err
	}
	return c.write(m)
}

// event queues a notification, built by build on the pump goroutine (so
// that encoding events costs the Codex reader nothing); it never blocks. It
// reports false when the event was dropped (queue full or client gone).
func (c *client) event(build func() *jsonrpcframe.Message) bool {
	if c.isGone() {
		c.dropped.Add(1)
		return false
	}
	select {
	case c.events <- build:
		return true
	default:
		c.dropped.Add(1)
		return false
	}
}

// request sends a server→client request with the proxy's own id and waits
// for the answer, ctx or the client's departure.
func (c *client) request(ctx context.Context, method string, params any) (*jsonrpcframe.Message, error) {
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		return nil, errClientGone
	}
	c.nextID++
	id := jsonrpcframe.IntID(c.nextID)
	ch := make(chan *jsonrpcframe.Message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	m, err := jsonrpcframe.NewRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	if err := c.write(m); err != nil {
		return nil, err
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, errClientGone
		}
		return resp, nil
	case <-ctx.Done():
		// Tell the client the request is moot (MCP cancellation).
		_ = c.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "no longer needed"})
		return nil, ctx.Err()
	}
}

// deliver routes a response from the client to the request waiting for it;
// it reports false for an unknown id.
func (c *client) deliver(m *jsonrpcframe.Message) bool {
	c.mu.Lock()
	ch, ok := c.pending[m.ID]
	if ok {
		delete(c.pending, m.ID)
	}
	c.mu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}

// progress sends notifications/progress for a client-supplied token.
type progress struct {
	c     *client
	token json.RawMessage
	mu    sync.Mutex
	n     int
	done  bool
}

func (p *progress) send(message string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.n++
	_ = p.c.notify("notifications/progress", map[string]any{
		"progressToken": p.token, "progress": p.n, "message": message,
	})
}

// finish stops progress; nothing is sent for the token afterwards.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}
