package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// ProtocolVersions are the MCP protocol versions a Conn speaks, newest
// first. initialize echoes the client's version when it is one of them,
// else answers with the newest.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Handler runs tools/call.
type Handler interface {
	// CallTool is called on the goroutine reading the client, in read
	// order. It holds the reading role until it returns or calls Release
	// (ToolCall.Release, or Release(ctx)); it must release before anything
	// that may wait (I/O, locks held by others, the child). It returns the
	// result, an error (sent as a JSON-RPC error, see proxyerr.ToWire), or
	// ErrAnswered after a successful ToolCall.TryReplyNow. ctx ends when
	// the client cancels the request or the Conn is shutting down.
	CallTool(ctx context.Context, call *ToolCall) (*ToolResult, error)
}

// Forwarder is optional on a Handler: requests a Conn does not answer
// itself and notifications other than notifications/initialized and
// notifications/cancelled. Without it such a request is METHOD_NOT_FOUND
// and such a notification is ignored.
type Forwarder interface {
	// Forward runs on a goroutine of its own, with a ctx that ends when the
	// client cancels the request or the Conn is shutting down. The message
	// it returns (a result or an error response) is written with the
	// request's id; an error is written as a JSON-RPC error.
	Forward(ctx context.Context, m *jsonrpcframe.Message) (*jsonrpcframe.Message, error)
	// Notify is called on the goroutine reading the client and must not
	// block.
	Notify(m *jsonrpcframe.Message)
}

// ServerInfo is the serverInfo of the initialize result.
type ServerInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// Config configures a Conn. Zero values are documented per field.
type Config struct {
	// Handler runs tools/call (and, when it is a Forwarder, what the Conn
	// does not answer itself). required.
	Handler Handler
	// ServerInfo names the server in the initialize result.
	ServerInfo ServerInfo
	// Instructions are the initialize result's instructions. optional.
	Instructions string
	// Tools is the JSON array of the tools' definitions, listed by
	// tools/list. optional: nil lists none.
	Tools json.RawMessage
	// Protocol chooses the MCP revisions spoken: ProtocolAuto (each
	// request's own, the modern one included) or ProtocolLegacy (only the
	// initialize-based ones). optional: "" means ProtocolAuto.
	Protocol string
	// EventQueue bounds the queue of events waiting for the client.
	// optional: 0 means 1024.
	EventQueue int
	// Logger receives the connection's logs. optional: nil discards.
	Logger *slog.Logger
}

// Conn is the MCP connection to one client over a byte stream (stdio):
// framing, the order in which requests are handled, cancellation,
// initialize and the list methods, server→client requests, progress and
// the events the server sends on its own. See the package documentation
// for its design.
type Conn struct {
	cfg       Config
	log       *slog.Logger
	toolsList []byte
	// modern: the tools/list result and the tail of every complete result
	// in the modern revision
	toolsListModern []byte
	completeTail    []byte
	pool            pool
	readDone        chan error // the reading ended, with why

	out *outbox // set by Start
	r   jsonrpcframe.Reader

	base    context.Context // every request's context derives from it
	stopAll context.CancelFunc
	wg      sync.WaitGroup // requests being handled

	mu       sync.Mutex // guards inflight, refuse, listens and pool; never held with the outbox's locks
	inflight map[jsonrpcframe.ID]*inflight
	refuse   error                       // set by Refuse: new requests get it
	listens  map[jsonrpcframe.ID]*listen // open subscriptions/listen streams (listchanged.go)

	elicitation     atomic.Bool
	protocolVersion atomic.Value // string
}

// New returns a Conn; Start or Serve connects it to the client.
func New(cfg Config) *Conn {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var tools []json.RawMessage
	if len(cfg.Tools) > 0 {
		if err := json.Unmarshal(cfg.Tools, &tools); err != nil {
			panic(fmt.Sprintf("mcpconn: Config.Tools is not a JSON array: %v", err)) // a build defect, caught by tests
		}
	}
	if tools == nil {
		tools = []json.RawMessage{}
	}
	list, _ := json.Marshal(map[string]any{"tools": tools})
	c := &Conn{cfg: cfg, log: cfg.Logger, toolsList: list, readDone: make(chan error, 1),
		inflight: map[jsonrpcframe.ID]*inflight{}}
	c.completeTail = c.modernTail("complete")
	modernList, _ := json.Marshal(map[string]any{"tools": tools, "ttlMs": 0, "cacheScope": "public"})
	c.toolsListModern = c.modernResult(modernList)
	c.pool.mu = &c.mu
	c.base, c.stopAll = context.WithCancel(context.Background())
	c.protocolVersion.Store("")
	return c
}

// Start connects the Conn to the client: it reads r (raw reads when r is a
// pipe *os.File) and writes w (with the pipe gauge when w is a pipe), in
// the framing the first message shows, on goroutines of its own. Done
// tells when the reading ends. Writing goes on until Close.
func (c *Conn) Start(r io.Reader, w io.Writer) {
	gauge := newPipeGauge(w)
	if gauge != nil {
		w = gauge
	}
	if f, ok := r.(*os.File); ok {
		r = jsonrpcframe.PipeReader(f) // raw reads where the pipe allows them
	}
	fr, fw := jsonrpcframe.NewAuto(r, w, nil)
	c.r = fr
	c.out = newOutbox(fw, gauge, c.cfg.EventQueue, c.log)
	go (&reader{c: c}).serve()
}

// Done receives how the reading ended: nil at the end of the client's
// stream, else the read error. It is sent once.
func (c *Conn) Done() <-chan error { return c.readDone }

// Serve is Start, then waits until the reading ends (returning its error)
// or ctx ends (returning nil).
func (c *Conn) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	c.Start(r, w)
	select {
	case err := <-c.readDone:
		return err
	case <-ctx.Done():
		return nil
	}
}

// Refuse makes every later request that would be handled (tools/call and
// forwarded requests) fail with err at once.
func (c *Conn) Refuse(err error) {
	c.mu.Lock()
	c.refuse = err
	c.mu.Unlock()
}

// CancelAll ends the context of every request being handled.
func (c *Conn) CancelAll() {
	c.stopAll()
}

// Wait waits at most d for every request being handled to end, and
// reports whether they did.
func (c *Conn) Wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Close ends the connection's writing: queued and held events are
// dropped, pending server→client requests fail, the event pump stops (it is
// abandoned after a second when the client no longer reads: the process is
// about to exit). Goroutines parked for the reading role end. Idempotent.
func (c *Conn) Close() {
	c.stopAll()
	if c.out != nil {
		c.out.close()
	}
	c.pool.close()
}

// Event sends a notification built by build without ever waiting for the
// client: written at once when nothing is queued and the client's pipe has
// room, else queued for the pump, or dropped when the queue is full or the
// client is gone (it then reports false). With hold, an event that would be
// written at once is held back to go out with the events after it, at the
// latest at the next Flush.
func (c *Conn) Event(build func() *jsonrpcframe.Message, hold bool) bool {
	return c.out.event(build, hold)
}

// Flush writes the events held back, if any, in one write.
func (c *Conn) Flush() { c.out.flushHeld() }

// Notify writes a notification to the client at once (after any held
// events).
func (c *Conn) Notify(method string, params any) error { return c.out.notify(method, params) }

// Request sends a server→client request with the Conn's own id and waits
// for the client's response, ctx's end (the client is then told with
// notifications/cancelled) or the client's departure (ErrClientGone).
func (c *Conn) Request(ctx context.Context, method string, params any) (*jsonrpcframe.Message, error) {
	return c.out.request(ctx, method, params)
}

// Elicitation reports whether the client declared the elicitation
// capability in initialize (a legacy client; a modern one declares it per
// request: ToolCall.Elicitation).
func (c *Conn) Elicitation() bool { return c.elicitation.Load() }

// ProtocolVersion returns the negotiated protocol version ("" before
// initialize).
func (c *Conn) ProtocolVersion() string { return c.protocolVersion.Load().(string) }

// Stats are a Conn's event counters.
type Stats struct {
	// Dropped counts the events dropped since the start (queue full or
	// client gone).
	Dropped int64
	// Queued counts the events (and progress) waiting for the pump now.
	Queued int
	// ProgressDropped counts the progress notifications dropped since the
	// start (queue full or client gone): progress never waits either.
	ProgressDropped int64
}

// Stats returns the event counters.
func (c *Conn) Stats() Stats {
	if c.out == nil {
		return Stats{}
	}
	return Stats{Dropped: c.out.dropped.Load(), Queued: c.out.queued(), ProgressDropped: c.out.progressDropped.Load()}
}

// errReleased ends the read loop of a goroutine whose call gave the
// reading role away.
var errReleased = errors.New("mcpconn: reading role released")

// readLoop reads the client for rd until EOF, a read error, or a call that
// released the role on this goroutine; kept reports whether this goroutine
// still had the role at the end.
func (c *Conn) readLoop(rd *reader) (err error, kept bool) {
	for {
		m, err := c.r.Read()
		if err != nil {
			var bad *jsonrpcframe.MessageError
			switch {
			case errors.As(err, &bad):
				c.log.Warn("bad message from client", "err", bad.Error())
				if errors.Is(err, jsonrpcframe.ErrBatch) {
					c.out.replyError(jsonrpcframe.NullID(), proxyerr.New(proxyerr.ErrInvalidRequest, nil,
						"JSON-RPC batches are not supported; send one message at a time"))
					continue
				}
				if err := c.out.write(bad.Response()); err != nil {
					c.log.Debug("parse error reply not delivered", "err", err)
				}
				continue
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				c.log.Info("mcp client closed stdin")
				return nil, true
			default:
				return fmt.Errorf("read mcp client: %w", err), true
			}
		}
		if errors.Is(c.dispatch(m, rd), errReleased) {
			return nil, false
		}
	}
}
