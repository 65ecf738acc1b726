package codexchild

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// AppServer is the Backend for `codex app-server` (Codex 0.154 and later;
// measured on 0.169.0). It speaks the app-server's own JSON-RPC dialect:
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
	cfg Config
	log *slog.Logger

	flushes flushSet // the reader goroutine's own

	lazyChild // mu guards it and the fields below

	versioned atomic.Bool // the child sent "jsonrpc": answer in kind

	version     string // from the initialize userAgent, else probed
	nextID      int64
	pending     map[jsonrpcframe.ID]*appCall
	turns       map[string]*appTurn // thread id → its running (or draining) turn
	loaded      map[string]bool     // threads this process started or resumed
	approvals   map[*Approval]*appApproval
	approvalSeq int64
}

var (
	_ Backend = (*AppServer)(nil)
	_ Steerer = (*AppServer)(nil)
)

// drainWait bounds how long a new turn waits for the interrupted previous
// turn of its thread to end in Codex before it fails with ErrThreadBusy.
var drainWait = 10 * time.Second // a var for tests

// NewAppServer returns a backend that runs `cfg.Bin [cfg.Args...]
// app-server` on first use.
func NewAppServer(cfg Config) *AppServer {
	return &AppServer{
		cfg:       cfg,
		log:       cfg.logger().With("component", "codexchild", "backend", string(KindAppServer)),
		pending:   map[jsonrpcframe.ID]*appCall{},
		turns:     map[string]*appTurn{},
		loaded:    map[string]bool{},
		approvals: map[*Approval]*appApproval{},
	}
}

// Kind returns KindAppServer.
func (b *AppServer) Kind() Kind { return KindAppServer }

// appCall is one request of the backend to the child waiting for its
// response. Whoever removes it from pending delivers its one reply.
type appCall struct {
	id     jsonrpcframe.ID
	method string
	reply  chan appReply // buffered 1; nil when nobody waits (turn/start, turn/interrupt)
	turn   *appTurn      // turn/start: the turn it starts
}

// appReply is how a call ended: the child's response or the child's death.
type appReply struct {
	msg *jsonrpcframe.Message
	err error
}

// ensureStarted starts the child and does the handshake, once; callers wait
// for it until ctx ends.
func (b *AppServer) ensureStarted(ctx context.Context) error {
	return b.lazyChild.ensureStarted(ctx, b.cfg, b.log, childHooks{
		subcommand: "app-server", dispatch: b.dispatch, idle: b.flushes.flush, watchExit: b.watchExit, handshake: b.handshake,
	})
}

// handshake sends initialize and the initialized notification, and reads
// Codex's version from the userAgent ("<client>/0.169.0 (...) ...").
func (b *AppServer) handshake() error {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
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
	return b.write(&jsonrpcframe.Message{Method: "initialized"})
}

// userAgentVersion returns the version in an app-server userAgent such as
// "atm-agent-mcp/0.169.0 (Debian 12.0.0; x86_64) xterm (...)", or "".
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

// Version returns the Codex version ("" before the handshake).
func (b *AppServer) Version() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.version
}

// Status reports the child's state.
func (b *AppServer) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Status{Kind: KindAppServer, Started: b.ch != nil, Version: b.version}
	if b.ch != nil {
		s.PID = b.ch.cmd.Process.Pid
		s.Running = b.exitErr == nil
	}
	if b.exitErr != nil {
		st := b.exitErr.Status
		s.Exit = &st
	}
	return s
}

// Close stops the child gracefully (close stdin; SIGTERM to its process
// group after Config.StopGrace; SIGKILL after another) and returns once it
// has exited and every pending call has failed with an *ExitError. When ctx
// ends first, the group is killed at once. Close is idempotent.
func (b *AppServer) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	ch, started := b.ch, b.startDone
	b.mu.Unlock()
	var err error
	if ch != nil {
		err = ch.stop(ctx)
	}
	if started != nil {
		<-started
	}
	b.mu.Lock()
	handled := b.exitHandled
	b.mu.Unlock()
	if handled != nil {
		<-handled
	}
	return err
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
	b.mu.Lock()
	if b.exitErr != nil {
		defer b.mu.Unlock()
		return nil, b.exitErr
	}
	if b.w == nil {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	b.nextID++
	m.ID = jsonrpcframe.IntID(b.nextID)
	c := &appCall{id: m.ID, method: method, turn: t}
	if wait {
		c.reply = make(chan appReply, 1)
	}
	b.pending[c.id] = c
	b.mu.Unlock()
	if err := b.write(m); err != nil {
		if b.take(c) || c.reply == nil {
			return nil, err
		}
		// The exit handler got there first.
		if r := <-c.reply; r.err != nil {
			return nil, r.err
		}
		return nil, err
	}
	return c, nil
}

// take removes c from pending; the caller then owns its reply.
func (b *AppServer) take(c *appCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[c.id] != c {
		return false
	}
	delete(b.pending, c.id)
	return true
}

// write writes one message to the child, without the "jsonrpc" member
// unless the child uses it. A failed write to a dying child reports the
// *ExitError.
func (b *AppServer) write(m *jsonrpcframe.Message) error {
	b.mu.Lock()
	w, ch := b.w, b.ch
	b.mu.Unlock()
	if w == nil {
		return ErrClosed
	}
	out := *m
	out.Versioned = b.versioned.Load()
	err := w.Write(&out)
	if err == nil {
		return nil
	}
	select {
	case <-ch.done:
		<-b.exitHandled
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.exitErr
	case <-time.After(time.Second):
	}
	return fmt.Errorf("codexchild: write to codex child: %w", err)
}
