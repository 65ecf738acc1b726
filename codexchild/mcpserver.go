package codexchild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// MCPServer is the Backend for `codex mcp-server` (Codex 0.104 – 0.153.4).
//
// # Design notes
//
// One reader goroutine per child reads its stdout and routes every message
// (router.go); it never blocks on a caller: replies go to 1-buffered
// channels, and handler callbacks, which must not block, are called without
// the backend's lock. All writes to the child's stdin go through one
// jsonrpcframe.Writer, which serialises them.
//
// The backend numbers its requests to the child itself (1, 2, ...), so the
// caller's ids never reach the child and nothing collides; Forward restores
// the caller's id on the reply. The child's own requests (elicitation/create,
// ids from 0) are answered by the backend with the child's id and surface as
// typed Approvals with backend-unique IDs.
//
// pending maps the backend's request ids to the calls waiting for them;
// threads maps a thread id to its running turn (learned from the first
// event's _meta.threadId for a new thread). A call ends exactly once: whoever
// removes it from pending (the reader with the child's answer, the caller on
// timeout or interrupt, the exit handler) sends its reply.
//
// Cancellation. Codex never answers a cancelled tools/call, so an interrupt
// or a timeout sends notifications/cancelled and answers the caller at once
// (a turn with OnAccepted that Codex has not acknowledged yet first waits a
// while for that, or the child's death: awaitAccepted);
// an approval answered with Abort ends the turn the same way without the
// notification. The request id is then dead and its thread tainted: because
// of Codex's stale-listener bug (docs/codex-wire.md#stale-listener), the events and
// even the result of a later turn on the same thread may arrive under the
// dead id. An event, approval or result whose request id is not live is
// therefore routed by its threadId to that thread's running turn, if any,
// and dropped with a log line otherwise; a result is also checked against
// the thread of the call its id names. A late result for a dead id is never
// delivered to another thread's caller.
//
// The child is started lazily by the first call that needs it, in a
// goroutine of its own that the callers wait for (with their ctx); a start
// or handshake failure is final, as is the child's death (FR-11.2: no
// restart): every pending call fails at once with the *ExitError and every
// later call fails fast with the same one.
type MCPServer struct {
	Codex            // what the seam asks of every Codex backend (options.go)
	flushes flushSet // the reader goroutine's own

	core[*call] // mu guards it and the fields below

	tools       json.RawMessage
	threads     map[string]*call                       // thread id → running turn
	dead        map[jsonrpcframe.ID]deadCall           // abandoned request ids
	approvals   map[*backend.Approval]*pendingApproval // unanswered approvals
	approvalSeq int64

	book *threadBook // the thread policy (threads.go); its own lock

	ids interner // strings of the events' envelopes; the reader's own
}

var (
	_ backend.Backend        = (*MCPServer)(nil)
	_ backend.Configurable   = (*MCPServer)(nil)
	_ backend.Sandboxed      = (*MCPServer)(nil)
	_ backend.WholeRestarter = (*MCPServer)(nil)
	_ backend.Named          = (*MCPServer)(nil)
	_ Passthrough            = (*MCPServer)(nil)
)

// NewMCPServer returns a backend that runs `cfg.Bin [cfg.Args...]
// mcp-server` on first use.
func NewMCPServer(cfg Config) *MCPServer {
	b := &MCPServer{
		threads:   map[string]*call{},
		dead:      map[jsonrpcframe.ID]deadCall{},
		approvals: map[*backend.Approval]*pendingApproval{},
		book:      newThreadBook(),
	}
	b.core = core[*call]{
		cfg: cfg, kind: KindMCPServer, pending: map[jsonrpcframe.ID]*call{}, onExit: cfg.OnExit,
		log: cfg.logger().With("component", "codexchild", "backend", string(KindMCPServer)),
		hooks: childHooks{
			subcommand: "mcp-server", dispatch: b.dispatch, idle: b.flushes.flush, handshake: b.handshake,
		},
		forgetLocked: b.forgetLocked,
		exitLocked: func(*backend.ExitError) func() {
			clear(b.threads)
			clear(b.approvals)
			return nil
		},
	}
	return b
}

// handshake sends initialize (declaring the elicitation capability),
// notifications/initialized and tools/list, and caches the tools.
func (b *MCPServer) handshake() (err error) {
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
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{"elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": ci.Name, "version": ci.Version},
	}, 0)
	if err != nil {
		return err
	}
	if e := resp.Err(); e != nil {
		return fmt.Errorf("initialize: %w", e)
	}
	var init struct {
		ServerInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(resp.Result, &init); err != nil {
		return fmt.Errorf("initialize result: %w", err)
	}
	b.mu.Lock()
	b.version = init.ServerInfo.Version
	b.mu.Unlock()
	b.log.Info("codex handshake done", "server", init.ServerInfo.Name, "version", init.ServerInfo.Version)
	n, _ := jsonrpcframe.NewNotification("notifications/initialized", nil)
	if err := b.write(n, nil); err != nil {
		return err
	}
	_, err = b.fetchTools(ctx)
	return err
}

// fetchTools asks the child for tools/list and caches the result.
func (b *MCPServer) fetchTools(ctx context.Context) (json.RawMessage, error) {
	resp, err := b.roundTrip(ctx, "tools/list", map[string]any{}, 0)
	if err != nil {
		return nil, err
	}
	if e := resp.Err(); e != nil {
		return nil, fmt.Errorf("tools/list: %w", e)
	}
	b.mu.Lock()
	b.tools = resp.Result
	b.mu.Unlock()
	return resp.Result, nil
}

// Tools returns the child's tools/list result, cached since the handshake
// (refetched after the child announced notifications/tools/list_changed).
func (b *MCPServer) Tools(ctx context.Context) (json.RawMessage, error) {
	if err := b.ensureStarted(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	tools := b.tools
	b.mu.Unlock()
	if tools != nil {
		return tools, nil
	}
	return b.fetchTools(ctx)
}

// Turn runs one turn with the codex tool (a new thread, or a fresh one in
// place of a thread this child cannot continue: see TurnRequest and
// threads.go) or codex-reply. ThreadParams are sent only when a thread
// starts (codex-reply takes none). A second turn on a thread whose turn is
// still running fails with ErrThreadBusy.
func (b *MCPServer) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	release := onceFunc(req.Release)
	defer release()
	if err := refuseOutputSchema(req, "codex mcp-server"); err != nil {
		return nil, err
	}
	if !b.startedOK() {
		release() // the start and the handshake take a while
	}
	if err := b.ensureStarted(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	running := req.ThreadID != "" && b.threads[req.ThreadID] != nil
	b.mu.Unlock()
	req, carried, replaced := b.book.plan(req, running, b.log)
	name, params := toolCallParams(req)
	t := &turn{handler: req.Handler, threadID: req.ThreadID, onResult: req.OnResult, onAccepted: req.OnAccepted, replaced: replaced}
	if req.ThreadID == "" {
		t.onThread = req.OnThread // a new thread: its id comes with its first event
	}
	if req.OnAccepted != nil {
		t.acked = make(chan struct{})
	}
	c, err := b.request("tools/call", params, t, release)
	if err != nil {
		return nil, err
	}
	release()
	if req.OnSent != nil {
		req.OnSent()
	}
	timeout := b.cfg.effectiveTimeout(req.Timeout)
	r, how := b.wait(ctx, c, timeout)
	if r.abandoned != notAbandoned && t.acked != nil {
		if ee := b.awaitAccepted(t.acked); ee != nil {
			r = reply{err: ee} // it died before a word about the turn
		}
	}

	// Barrier: after this no callback of this turn runs.
	t.over.Store(true)
	t.closed.Store(true)
	t.mu.Lock()
	turnID, partial := t.turnID, ""
	if r.abandoned != notAbandoned {
		partial = t.partial() // the text so far, for a turn that did not end
	}
	texts := t.texts
	t.mu.Unlock()
	b.mu.Lock()
	threadID := t.threadID
	b.mu.Unlock()
	res, err := b.turnResult(ctx, name, r, how, timeout, threadID, turnID, partial)
	b.book.remember(res, threadID, carried, texts)
	if res != nil && replaced != "" {
		res.Replaced = replaced
	}
	return res, err
}

// turnResult makes the Result (or the error) of a turn from its reply.
func (b *MCPServer) turnResult(ctx context.Context, name string, r reply, how waitHow, timeout time.Duration, threadID, turnID, partial string) (*backend.Result, error) {
	switch {
	case r.err != nil:
		return nil, r.err
	case r.abandoned == abandonTimeout:
		return nil, &backend.TimeoutError{After: timeout, ThreadID: threadID, Partial: partial}
	case r.abandoned != notAbandoned:
		text := "codex turn interrupted"
		if r.abandoned == abandonAbort {
			text = "codex turn aborted (approval answered with abort)"
		}
		res := &backend.Result{ThreadID: threadID, TurnID: turnID, Text: text, IsError: true, Status: "interrupted", Partial: partial}
		if how == waitCtx {
			return res, ctx.Err()
		}
		return res, nil
	}
	if e := r.msg.Err(); e != nil {
		return nil, fmt.Errorf("codexchild: tools/call %s: %w", name, e)
	}
	if r.res != nil {
		return r.res, nil // read by the reader for OnResult
	}
	res, err := parseResult(r.msg.Result, threadID, turnID)
	if err != nil {
		return nil, fmt.Errorf("codexchild: tools/call %s: bad result: %w", name, err)
	}
	return res, nil
}

// Interrupt interrupts the running turn of a thread: it sends
// notifications/cancelled and makes the Turn return an interrupted Result.
func (b *MCPServer) Interrupt(ctx context.Context, threadID string) error {
	b.mu.Lock()
	c := b.threads[threadID]
	b.mu.Unlock()
	if c == nil {
		return nil
	}
	b.abandon(c, abandonInterrupt)
	return nil
}

// Forward sends a request to the child with the backend's own id and
// returns the child's response with the caller's id. The methods Codex
// never answers are answered here: resources/list, resources/templates/list
// and prompts/list with empty lists. initialize is refused (the backend does
// its own handshake). Events of a forwarded tools/call go to
// Config.OnEvent and its approvals are denied; use Turn for turns. The call
// is bounded by Config.DefaultTimeout (*TimeoutError) and ctx; either sends
// notifications/cancelled.
func (b *MCPServer) Forward(ctx context.Context, req *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	if !req.IsRequest() {
		return nil, fmt.Errorf("codexchild: forward: not a request (%s)", req.Kind())
	}
	switch req.Method {
	case "resources/list":
		return jsonrpcframe.NewResponse(req.ID, map[string]any{"resources": []any{}})
	case "resources/templates/list":
		return jsonrpcframe.NewResponse(req.ID, map[string]any{"resourceTemplates": []any{}})
	case "prompts/list":
		return jsonrpcframe.NewResponse(req.ID, map[string]any{"prompts": []any{}})
	case "initialize":
		return nil, errors.New("codexchild: forward initialize: the backend does its own handshake")
	case "completion/complete", "resources/subscribe", "resources/unsubscribe":
		// codex mcp-server takes these and never answers them: a client
		// would wait for its whole timeout.
		return nil, fmt.Errorf("codexchild: forward %s: %w", req.Method, backend.ErrUnsupported)
	}
	if err := b.ensureStarted(ctx); err != nil {
		return nil, err
	}
	out := *req
	c, err := b.sendMessage(&out, req.ID, nil, nil)
	if err != nil {
		return nil, err
	}
	timeout := b.cfg.effectiveTimeout(0)
	r, how := b.wait(ctx, c, timeout)
	switch {
	case r.err != nil:
		return nil, r.err
	case r.abandoned == abandonTimeout:
		return nil, &backend.TimeoutError{After: timeout}
	case r.abandoned != notAbandoned:
		if how == waitCtx {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("codexchild: forward %s: cancelled", req.Method)
	}
	resp := *r.msg
	resp.ID = req.ID
	return &resp, nil
}

// Notify sends a notification to the child verbatim. (To cancel a turn use
// Interrupt: the child knows only the backend's request ids.)
func (b *MCPServer) Notify(ctx context.Context, n *jsonrpcframe.Message) error {
	if !n.IsNotification() {
		return fmt.Errorf("codexchild: notify: not a notification (%s)", n.Kind())
	}
	if err := b.ensureStarted(ctx); err != nil {
		return err
	}
	return b.write(n, nil)
}
