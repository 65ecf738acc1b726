package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Client is one agent process and the ACP connection to it. Start it with
// Start; open sessions with NewSession, LoadSession or ResumeSession; end
// it with Close. Every method is safe for concurrent use.
type Client struct {
	cfg  Config
	log  *slog.Logger
	proc *childproc.Process
	w    jsonrpcframe.Writer
	info AgentInfo // set by Start before the client is returned

	mu        sync.Mutex
	nextID    int64
	pending   map[jsonrpcframe.ID]*call
	sessions  map[string]*Session
	perms     map[string]*permission
	nextPerm  int64
	exitErr   *ExitError // set once the agent has died
	closed    bool
	events    chan Event // nil when there is no OnEvent
	evClosed  bool
	late      int64 // updates outside any turn
	badUpdate int64 // session/update params that could not be read
	queued    int64 // events queued for OnEvent so far

	// delivered counts the events OnEvent has returned from; Sync waits
	// on it. dmu guards it and wake (closed and replaced when a waiter
	// asked to be woken).
	dmu       sync.Mutex
	delivered int64
	wake      chan struct{}

	dropped atomic.Int64 // events dropped for a slow OnEvent
	garbage atomic.Int64 // bad lines on stdout

	exited     chan struct{} // closed when the death was handled
	eventsDone chan struct{} // closed when the OnEvent goroutine ended

	// answering are the goroutines the reader starts to answer the agent
	// (the Asker's answers, rejections, -32601): only the reader adds to
	// it, so Close waits for it once the reader has ended (exited).
	answering sync.WaitGroup
}

// AgentInfo is what the agent said about itself in initialize.
type AgentInfo struct {
	ProtocolVersion int
	Name, Version   string
	Capabilities    Capabilities
	AuthMethods     []AuthMethod
}

// call is one request of the client waiting for the agent's answer.
type call struct {
	id     jsonrpcframe.ID
	method string
	done   chan struct{} // closed when result or err is set
	result json.RawMessage
	err    error
	// onResult (optional) runs on the reader goroutine, with Client.mu
	// held, when a successful answer arrives, before any later message is
	// read (session/new registers its session there, so that the updates
	// the agent sends right after the answer find it).
	onResult func(json.RawMessage)
	// onEnd (optional) runs with Client.mu held when the call ends with
	// any answer, or with the agent's death, before done is closed (a
	// turn ends there, in the order of the agent's messages).
	onEnd func()
}

// Start starts the agent, reads its stdout and does initialize (and
// authenticate when Config.AuthMethod is set). An agent that does not
// answer within Config.InitTimeout, refuses, or speaks another protocol
// version is killed and Start fails with ErrHandshake; ctx bounds the same
// wait.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Command == "" {
		return nil, errors.New("acp: config has no Command")
	}
	log := cfg.logger().With("agent", cfg.Command)
	proc, err := childproc.Start(childproc.Config{
		Name:  cfg.name(),
		Spec:  childproc.Spec{Path: cfg.Command, Args: cfg.Args, Env: cfg.env(), Dir: cfg.Dir},
		Guard: cfg.Guard, Grace: cfg.stopGrace(), Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("acp: %w", err)
	}
	c := &Client{
		cfg:        cfg,
		log:        log,
		proc:       proc,
		w:          jsonrpcframe.NewLineWriter(proc),
		pending:    make(map[jsonrpcframe.ID]*call),
		sessions:   make(map[string]*Session),
		perms:      make(map[string]*permission),
		exited:     make(chan struct{}),
		eventsDone: make(chan struct{}),
	}
	if cfg.OnEvent != nil {
		c.events = make(chan Event, cfg.eventBuffer())
		go c.deliver()
	} else {
		close(c.eventsDone)
	}
	go c.read()
	go c.watchExit()
	if err := c.handshake(ctx); err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) {
			c.proc.Kill(childproc.Because(fmt.Sprintf("its handshake failed: %v", err), ErrHandshake, err))
		}
		<-c.exited
		c.closeEvents()
		c.answering.Wait() // the agent is dead: their answers fail at once
		return nil, fmt.Errorf("acp: start %s: %w: %w", cfg.Command, ErrHandshake, err)
	}
	return c, nil
}

// handshake does initialize and authenticate.
func (c *Client) handshake(ctx context.Context) error {
	name, version := c.cfg.ClientName, c.cfg.ClientVersion
	if name == "" {
		name = DefaultClientName
	}
	if version == "" {
		version = "dev"
	}
	raw, err := c.call(ctx, methodInitialize, initializeParams{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      implementation{Name: name, Version: version},
	}, c.cfg.initTimeout(), nil)
	if err != nil {
		return err
	}
	var res initializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("initialize result: %w", err)
	}
	if res.ProtocolVersion != ProtocolVersion {
		return fmt.Errorf("the agent speaks protocol version %d, this client %d", res.ProtocolVersion, ProtocolVersion)
	}
	c.info = AgentInfo{ProtocolVersion: res.ProtocolVersion, Capabilities: parseCapabilities(res.AgentCapabilities), AuthMethods: res.AuthMethods}
	c.info.Capabilities.Steering = steeringOf(res.Meta)
	if res.AgentInfo != nil {
		c.info.Name, c.info.Version = res.AgentInfo.Name, res.AgentInfo.Version
	}
	c.log.Info("acp agent initialized", "name", c.info.Name, "version", c.info.Version, "capabilities", string(res.AgentCapabilities))
	if m := c.cfg.AuthMethod; m != "" {
		known := false
		for _, a := range res.AuthMethods {
			known = known || a.ID == m
		}
		if !known {
			return fmt.Errorf("auth method %q is not one the agent offers (%v)", m, res.AuthMethods)
		}
		if _, err := c.call(ctx, methodAuthenticate, struct {
			MethodID string `json:"methodId"`
		}{m}, c.cfg.initTimeout(), nil); err != nil {
			return err
		}
	}
	return nil
}

// Info returns what the agent said about itself in initialize.
func (c *Client) Info() AgentInfo { return c.info }

// call sends a request and waits for its answer, at most timeout (negative:
// no limit) and until ctx ends. A JSON-RPC error of the agent is returned
// wrapped (errors.Is finds ErrAuthRequired and the other code sentinels).
func (c *Client) call(ctx context.Context, method string, params any, timeout time.Duration, onResult func(json.RawMessage)) (json.RawMessage, error) {
	cl, err := c.send(method, params, onResult, nil)
	if err != nil {
		return nil, err
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-cl.done:
		return cl.result, cl.err
	case <-expired:
		c.forget(cl)
		return nil, &TimeoutError{Method: method, After: timeout}
	case <-ctx.Done():
		c.forget(cl)
		return nil, fmt.Errorf("acp %s: %w", method, ctx.Err())
	}
}

// send registers and writes a request. reg (optional) runs with mu held
// before the call is registered, and may refuse it.
func (c *Client) send(method string, params any, onResult func(json.RawMessage), reg func(*call) error) (*call, error) {
	c.mu.Lock()
	if c.exitErr != nil {
		defer c.mu.Unlock()
		return nil, c.exitErr
	}
	c.nextID++
	cl := &call{id: jsonrpcframe.IntID(c.nextID), method: method, done: make(chan struct{}), onResult: onResult}
	if reg != nil {
		if err := reg(cl); err != nil {
			c.mu.Unlock()
			return nil, err
		}
	}
	c.pending[cl.id] = cl
	c.mu.Unlock()
	m, err := jsonrpcframe.NewRequest(cl.id, method, params)
	if err == nil {
		err = c.write(m)
	}
	if err != nil {
		c.forget(cl)
		return nil, err
	}
	return cl, nil
}

// forget drops a call nobody waits for any more; a late answer is logged
// and dropped.
func (c *Client) forget(cl *call) {
	c.mu.Lock()
	if c.pending[cl.id] == cl {
		delete(c.pending, cl.id)
	}
	c.mu.Unlock()
}

// notify sends a notification.
func (c *Client) notify(method string, params any) error {
	m, err := jsonrpcframe.NewNotification(method, params)
	if err != nil {
		return err
	}
	return c.write(m)
}

// write writes one message to the agent; a write to a dead agent reports
// its *ExitError.
func (c *Client) write(m *jsonrpcframe.Message) error {
	err := c.w.Write(m)
	if err == nil {
		return nil
	}
	select {
	case <-c.exited:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.exitErr
	case <-time.After(time.Second):
	}
	return fmt.Errorf("acp: write to the agent: %w", err)
}

// answer writes the response to a request of the agent.
func (c *Client) answer(id jsonrpcframe.ID, result any) {
	m, err := jsonrpcframe.NewResponse(id, result)
	if err == nil {
		err = c.write(m)
	}
	if err != nil {
		c.log.Warn("acp: answering the agent failed", "id", id.String(), "err", err)
	}
}

// answerAsync runs f, which answers the agent, on a goroutine of its own
// that Close joins; only the reader calls it (see read).
func (c *Client) answerAsync(f func()) { c.answering.Go(f) }

// watchExit fails every pending call and permission request when the
// agent has died.
func (c *Client) watchExit() {
	<-c.proc.Done()
	ee := exitError(c.proc.Err())
	c.mu.Lock()
	c.exitErr = ee
	closed := c.closed
	calls := make([]*call, 0, len(c.pending))
	for _, cl := range c.pending {
		calls = append(calls, cl)
	}
	clear(c.pending)
	for _, cl := range calls {
		cl.err = ee.during(cl.method)
		if cl.onEnd != nil {
			cl.onEnd()
		}
		close(cl.done)
	}
	perms := make([]*permission, 0, len(c.perms))
	for _, p := range c.perms {
		perms = append(perms, p)
	}
	c.mu.Unlock()
	for _, p := range perms {
		p.stop()
	}
	if closed {
		c.log.Info(c.cfg.name()+" stopped", "status", ee.Status.String(), "pending", len(calls))
	} else {
		c.log.Error(c.cfg.name()+" died", "status", ee.Status.String(), "pending", len(calls), "stderr", ee.Stderr)
	}
	close(c.exited)
}

// emitLocked queues ev for OnEvent, or drops and counts it when the queue
// is full; mu is held. It never blocks.
func (c *Client) emitLocked(ev Event) {
	if c.events == nil || c.evClosed {
		return
	}
	select {
	case c.events <- ev:
		c.queued++
	default:
		if c.dropped.Add(1) == 1 {
			c.log.Warn("acp: OnEvent is slow; dropping events", "buffer", cap(c.events))
		}
	}
}

// closeEvents ends the OnEvent goroutine once it has delivered what is
// queued.
func (c *Client) closeEvents() {
	c.mu.Lock()
	if c.events != nil && !c.evClosed {
		c.evClosed = true
		close(c.events)
	}
	c.mu.Unlock()
}

// deliver calls OnEvent for every queued event, in order, and OnIdle
// whenever the queue is empty after one.
func (c *Client) deliver() {
	defer close(c.eventsDone)
	for ev := range c.events {
		c.cfg.OnEvent(ev)
		c.dmu.Lock()
		c.delivered++
		if c.wake != nil {
			close(c.wake)
			c.wake = nil
		}
		c.dmu.Unlock()
		if c.cfg.OnIdle != nil && len(c.events) == 0 {
			c.cfg.OnIdle()
		}
	}
}

// Sync waits until OnEvent has returned for every event queued before the
// call (a turn's events are all queued before Session.Prompt returns), or
// until the client's event delivery has ended or ctx ends. It returns at
// once without OnEvent. Sync must not be called from OnEvent.
func (c *Client) Sync(ctx context.Context) error {
	c.mu.Lock()
	target := c.queued
	c.mu.Unlock()
	for {
		c.dmu.Lock()
		if c.delivered >= target {
			c.dmu.Unlock()
			return nil
		}
		if c.wake == nil {
			c.wake = make(chan struct{})
		}
		w := c.wake
		c.dmu.Unlock()
		select {
		case <-w:
		case <-c.eventsDone:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("acp: waiting for OnEvent: %w", ctx.Err())
		}
	}
}

// Close ends every session the agent can close (session/close), then stops
// the agent: close its stdin, SIGTERM to its process group after
// Config.StopGrace, SIGKILL after another; at once when ctx ends. It
// returns when the agent has exited, every pending call has failed and
// OnEvent has had every queued event and the answers to the agent's
// requests have ended (their permission requests are cancelled with its
// death), or ctx ended. Close is idempotent.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	var open []*Session
	if c.exitErr == nil && c.info.Capabilities.Close {
		for _, s := range c.sessions {
			open = append(open, s)
		}
	}
	c.mu.Unlock()
	if !already {
		for _, s := range open {
			// A turn still running is cancelled by session/close itself.
			if err := s.closeRemote(ctx, min(c.cfg.stopGrace(), c.cfg.callTimeout())); err != nil {
				c.log.Warn("acp: session/close failed", "session", s.id, "err", err)
			}
		}
	}
	err := c.proc.Stop(ctx)
	<-c.exited
	c.closeEvents()
	answered := make(chan struct{})
	go func() { c.answering.Wait(); close(answered) }()
	for _, done := range []<-chan struct{}{c.eventsDone, answered} {
		select {
		case <-done:
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return err
		}
	}
	return err
}
