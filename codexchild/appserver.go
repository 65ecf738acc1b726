package codexchild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/toolhttp"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// AppServer is the Backend for `codex app-server` (Codex 0.154 and later;
// measured on 0.169.0 and 0.171.0). It speaks the app-server's own JSON-RPC dialect:
// NDJSON without the "jsonrpc" member, thread/start, turn/start answered at
// once and ended by the turn/completed notification, turn/interrupt,
// turn/steer, thread/resume from Codex's rollout files, and
// item/*/requestApproval server requests.
//
// # Design notes
//
// As in MCPServer, one reader goroutine per child routes every message
// (appread.go) and never blocks on a caller: replies go to 1-buffered
// channels and handler callbacks, which must not block, run without the
// backend's lock. All writes go through one jsonrpcframe.Writer.
//
// The backend numbers its own requests (1, 2, ...). pending maps them to the
// callers waiting for the response; turns maps a thread id to the turn
// running on it. A turn is registered before its turn/start is written, so
// the notifications Codex sends before the turn/start response (a warning)
// find it by thread id. The reader records the Codex turn id from the
// turn/start response and ends the turn on turn/completed, on an error
// response to turn/start, or when the child dies; the Turn caller waits only
// for that end (appTurn.done), its ctx, its timeout or an Interrupt.
//
// Interrupts are clean on app-server, unlike mcp-server's cancellation: an
// interrupted, timed-out or cancelled Turn returns at once, turn/interrupt
// is sent (as soon as the Codex turn id is known), and the turn stays in
// turns, abandoned, until Codex's turn/completed arrives; its events then go
// to Config.OnEvent. A new turn on that thread waits for that (at most
// drainWait) instead of racing the old one in Codex.
//
// The child is started lazily and a start failure or the child's death is
// final, exactly as for MCPServer.
type AppServer struct {
	Codex            // what the seam asks of every Codex backend (options.go)
	flushes flushSet // the reader goroutine's own

	core[*appCall] // mu guards it and the fields below (version: from the initialize userAgent, else probed)

	turns       map[string]*appTurn  // thread id → its running (or draining) turn
	subs        map[string]*subAgent // sub-agent thread id → the running turn it belongs to (appsubagents.go)
	loaded      map[string]bool      // threads this process started or resumed
	models      map[string]string    // the model each loaded thread runs, as thread/start or thread/resume answered
	approvals   map[*backend.Approval]*appApproval
	approvalSeq int64

	notes threadNotes // denial notes a steer could not deliver: the thread's next prompt opens with them (denialnote.go)

	// tools serves the threads' tool servers over HTTP for Codex on a
	// host (hosttools.go); nil without Config.Host.
	tools *toolhttp.Server
}

var (
	_ backend.Backend        = (*AppServer)(nil)
	_ backend.Configurable   = (*AppServer)(nil)
	_ backend.Sandboxed      = (*AppServer)(nil)
	_ backend.WholeRestarter = (*AppServer)(nil)
	_ backend.Named          = (*AppServer)(nil)
	_ backend.Steerer        = (*AppServer)(nil)
)

// drainWait bounds how long a new turn waits for the interrupted previous
// turn of its thread to end in Codex before it fails with ErrThreadBusy.
var drainWait = 10 * time.Second // a var for tests

// acceptWait bounds how long a turn abandoned before the child
// acknowledged it (TurnRequest.OnAccepted) waits for that acknowledgement
// or the child's death, on both backends.
const acceptWait = 2 * time.Second

// NewAppServer returns a backend that runs `cfg.Bin [cfg.Args...]
// app-server` on first use.
func NewAppServer(cfg Config) *AppServer {
	b := &AppServer{
		turns:     map[string]*appTurn{},
		subs:      map[string]*subAgent{},
		loaded:    map[string]bool{},
		models:    map[string]string{},
		approvals: map[*backend.Approval]*appApproval{},
	}
	// The child is answered in kind: without "jsonrpc" until it is seen
	// using it.
	b.core = core[*appCall]{
		cfg: cfg, kind: KindAppServer, pending: map[jsonrpcframe.ID]*appCall{}, onExit: cfg.OnExit, plain: true,
		log: cfg.logger().With("component", "codexchild", "backend", string(KindAppServer)),
		hooks: childHooks{
			subcommand: "app-server", dispatch: b.dispatch, idle: b.flushes.flush, handshake: b.handshake,
		},
		exitLocked: b.exitLocked,
	}
	if cfg.Host != nil {
		b.tools = toolhttp.New(toolhttp.Config{Host: cfg.Host, Logger: b.log})
	}
	return b
}

// appCall is one request of the backend to the child waiting for its
// response. Whoever removes it from pending delivers its one reply.
type appCall struct {
	id     jsonrpcframe.ID
	method string
	reply  chan appReply // buffered 1; nil when nobody waits (turn/start, turn/interrupt)
	turn   *appTurn      // turn/start: the turn it starts
}

func (c *appCall) callID() jsonrpcframe.ID { return c.id }

func (c *appCall) fail(ee *backend.ExitError) {
	if c.reply != nil {
		c.reply <- appReply{err: ee}
	}
}

func (c *appCall) ended() error {
	if c.reply == nil {
		return nil
	}
	return (<-c.reply).err
}

// appReply is how a call ended: the child's response or the child's death.
type appReply struct {
	msg *jsonrpcframe.Message
	err error
}

// handshake sends initialize and the initialized notification, and reads
// Codex's version from the userAgent ("<client>/0.171.0 (...) ...").
func (b *AppServer) handshake() (err error) {
	timeout := b.cfg.handshakeTimeout()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer func() {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s (handshake timeout)", timeout)
		}
	}()
	ci := b.cfg.clientInfo()
	resp, err := b.roundTrip(ctx, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": ci.Name, "title": ci.Name, "version": ci.Version},
	})
	if err != nil {
		return err
	}
	if e := resp.Err(); e != nil {
		return fmt.Errorf("initialize: %w", e)
	}
	var init struct {
		UserAgent string `json:"userAgent"`
		CodexHome string `json:"codexHome"`
	}
	if err := json.Unmarshal(resp.Result, &init); err != nil {
		return fmt.Errorf("initialize result: %w", err)
	}
	b.mu.Lock()
	if v := userAgentVersion(init.UserAgent); v != "" {
		b.version = v
	}
	version := b.version
	b.mu.Unlock()
	b.log.Info("codex handshake done", "version", version, "user_agent", init.UserAgent, "codex_home", init.CodexHome)
	return b.write(&jsonrpcframe.Message{Method: "initialized"}, nil)
}

// userAgentVersion returns the version in an app-server userAgent such as
// "atm-agent-mcp/0.171.0 (Debian 12.0.0; x86_64) xterm (...)", or "".
func userAgentVersion(ua string) string {
	first, _, _ := strings.Cut(ua, " ")
	i := strings.LastIndexByte(first, '/')
	if i < 0 {
		return ""
	}
	v := first[i+1:]
	if _, _, ok := parseVersion(v); !ok {
		return ""
	}
	return v
}

// roundTrip sends a request of the backend's own and waits for its
// response (an error response is returned as a message, not an error).
func (b *AppServer) roundTrip(ctx context.Context, method string, params any) (*jsonrpcframe.Message, error) {
	c, err := b.send(method, params, true, nil)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-c.reply:
		return r.msg, r.err
	case <-ctx.Done():
		if b.take(c) {
			return nil, fmt.Errorf("codexchild: %s: %w", method, context.Cause(ctx))
		}
		r := <-c.reply
		return r.msg, r.err
	}
}

// send registers a call for a new request and writes it. wait says whether
// a caller will read the reply; t is the turn a turn/start starts.
func (b *AppServer) send(method string, params any, wait bool, t *appTurn) (*appCall, error) {
	m, err := jsonrpcframe.NewRequest(jsonrpcframe.ID{}, method, params)
	if err != nil {
		return nil, fmt.Errorf("codexchild: %s: %w", method, err)
	}
	return b.core.send(m, func(id jsonrpcframe.ID) (*appCall, error) {
		c := &appCall{id: id, method: method, turn: t}
		if wait {
			c.reply = make(chan appReply, 1)
		}
		return c, nil
	}, nil)
}
