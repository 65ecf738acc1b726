package fakebackend

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Config says what a Backend stands for. Every field is optional.
type Config struct {
	// Protocol is the thread policy the fake follows and the protocol its
	// Status names: codexchild.KindMCPServer or codexchild.KindAppServer.
	// optional: "" means every thread a turn names continues, and Status
	// names "fake".
	Protocol codexchild.Kind
	// PID is Status's pid while the fake runs. optional: 0 means 4242.
	PID int
	// Unstarted makes the fake a child that is not running until Start.
	// optional: false means it runs from New.
	Unstarted bool
	// StartGate, when set, is waited for by Start (until it is closed).
	StartGate <-chan struct{}
	// CloseGate, when set, is waited for by Close (until it is closed).
	CloseGate <-chan struct{}
}

// Backend is the scriptable fake backend. Its methods are safe for
// concurrent use.
type Backend struct {
	codexchild.Codex // a Codex backend, as the seam asks it

	cfg    Config
	answer chan string // a BLOCK turn's result text (Answer)

	mu        sync.Mutex
	reqs      []backend.TurnRequest
	threads   int                      // threads made so far
	known     map[string]bool          // threads this backend ran
	tainted   map[string]bool          // mcp-server: threads whose last turn was interrupted
	lost      map[string]bool          // threads the agent lost (Lose)
	running   map[string]chan struct{} // thread → its running turn's interrupt
	approvals int                      // approvals asked so far
	tokens    map[string]int64         // each thread's token total (TOKENS)
	fromRead  bool                     // results go to OnResult first (AnswerFromReader)
	watch     bool                     // WatchAnswered
	cancelled int                      // turns cancelled after their answer (WatchAnswered)
	gates     map[string]<-chan struct{}
	down      error
	started   bool
	exit      *backend.ExitStatus
	closes    int
	onNotify  func(context.Context, *jsonrpcframe.Message) error
}

var (
	_ backend.Backend        = (*Backend)(nil)
	_ backend.Starter        = (*Backend)(nil)
	_ backend.Availability   = (*Backend)(nil)
	_ codexchild.Passthrough = (*Backend)(nil)
)

// New returns a fake backend for cfg.
func New(cfg Config) *Backend {
	if cfg.PID == 0 {
		cfg.PID = 4242
	}
	return &Backend{cfg: cfg, answer: make(chan string), known: map[string]bool{}, tainted: map[string]bool{},
		lost: map[string]bool{}, running: map[string]chan struct{}{}, tokens: map[string]int64{}, gates: map[string]<-chan struct{}{},
		fromRead: cfg.Protocol == codexchild.KindMCPServer, started: !cfg.Unstarted}
}

// Requests returns the turns asked so far, as the fake took them (after
// its thread policy: a fresh thread's ThreadID is "", a continued one's
// Prompt has its Preamble).
func (f *Backend) Requests() []backend.TurnRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]backend.TurnRequest(nil), f.reqs...)
}

// Prompts returns the prompts of Requests.
func (f *Backend) Prompts() []string {
	var out []string
	for _, r := range f.Requests() {
		out = append(out, r.Prompt)
	}
	return out
}

// Approvals is how many approvals the turns asked.
func (f *Backend) Approvals() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.approvals
}

// Answer gives text to a BLOCK turn as its result; it waits until one
// takes it.
func (f *Backend) Answer(text string) { f.answer <- text }

// Lose makes the agent lose thread: the next turn on it that is not
// SameThread runs on a new thread that replaces it.
func (f *Backend) Lose(thread string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost[thread] = true
}

// AnswerFromReader makes every result go to the turn's OnResult first,
// from another goroutine, as codexchild's reader answers (on by default
// under codexchild.KindMCPServer).
func (f *Backend) AnswerFromReader(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fromRead = on
}

// WatchAnswered makes each turn answered through OnResult watch its
// context for 20 ms more and count in CancelledAfterAnswer the turns
// cancelled meanwhile: an answered turn is over, and the end of the
// client's request must not cancel it.
func (f *Backend) WatchAnswered(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watch = on
}

// CancelledAfterAnswer is how many turns WatchAnswered saw cancelled.
func (f *Backend) CancelledAfterAnswer() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled
}

// Gate holds every turn whose prompt starts with prefix, before its
// request is sent, until gate is closed (or the turn's context ends).
func (f *Backend) Gate(prefix string, gate <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gates[prefix] = gate
}

// SetDown makes Unavailable say err (nil: the agent is up).
func (f *Backend) SetDown(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = err
}

// Unavailable says what SetDown set (backend.Availability).
func (f *Backend) Unavailable() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

// Exit makes the child exit with st: every turn from now on fails with an
// *ExitError, and Status says so.
func (f *Backend) Exit(st backend.ExitStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exit = &st
}

// Die is Exit as by SIGKILL.
func (f *Backend) Die() { f.Exit(backend.ExitStatus{Code: -1, Signal: "killed"}) }

// Closes is how many times Close was called.
func (f *Backend) Closes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closes
}

// OnNotify makes fn what Notify does with a notification passed on to the
// child (nil: nothing).
func (f *Backend) OnNotify(fn func(context.Context, *jsonrpcframe.Message) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onNotify = fn
}

// Interrupt ends the running turn of threadID, if any, as interrupted.
func (f *Backend) Interrupt(_ context.Context, threadID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.running[threadID]; ok {
		close(ch)
		delete(f.running, threadID)
	}
	return nil
}

// Status reports the fake child: running from New (or Start) until it
// exits or is closed.
func (f *Backend) Status() backend.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	protocol := string(f.cfg.Protocol)
	if protocol == "" {
		protocol = "fake"
	}
	st := backend.Status{Protocol: protocol, Started: f.started, Running: f.started && f.exit == nil, Version: "fake", Exit: f.exit}
	if f.started {
		st.PID = f.cfg.PID
	}
	return st
}

// Start starts the child (after Config.StartGate); a child that exited
// before it started says so.
func (f *Backend) Start(context.Context) error {
	if f.cfg.StartGate != nil {
		<-f.cfg.StartGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.exit != nil {
		return &backend.ExitError{Status: *f.exit}
	}
	f.started = true
	return nil
}

// Close stops the child (after Config.CloseGate): it exits with code 0
// unless it had exited already.
func (f *Backend) Close(context.Context) error {
	if f.cfg.CloseGate != nil {
		<-f.cfg.CloseGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
	if f.exit == nil {
		f.exit = &backend.ExitStatus{Code: 0}
	}
	return nil
}

// Forward answers an MCP request passed through to an mcp-server child:
// "echo" with its params, anything else with method not found. Other
// protocols have no passthrough (backend.ErrUnsupported).
func (f *Backend) Forward(_ context.Context, req *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	if f.cfg.Protocol != codexchild.KindMCPServer {
		return nil, backend.ErrUnsupported
	}
	if req.Method == "echo" {
		return jsonrpcframe.NewResponse(jsonrpcframe.IntID(1), json.RawMessage(req.Params))
	}
	return &jsonrpcframe.Message{Versioned: true, ID: jsonrpcframe.IntID(1),
		Error: json.RawMessage(`{"code":-32601,"message":"method not found: ` + strings.ReplaceAll(req.Method, `"`, ``) + `"}`)}, nil
}

// Notify passes a notification to the child: what OnNotify set does with
// it.
func (f *Backend) Notify(ctx context.Context, m *jsonrpcframe.Message) error {
	f.mu.Lock()
	fn := f.onNotify
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, m)
	}
	return nil
}
