package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// fakeBackend is an in-process Backend. The last line of a turn's prompt
// picks what the turn does:
//   - default: the result "echo: <last line>" at once
//   - "BLOCK": waits until the test's release channel gives it a result
//     text, it is interrupted, or ctx ends
//   - "APPROVE": asks an exec approval and reports the decision
//   - "DIE": the child dies after the request was written, before it
//     acknowledged the turn (OnSent, no OnAccepted, an *ExitError)
//   - "DIE_ACCEPTED": the child dies after it acknowledged the turn
//   - "TOKENS n": the thread's token totals grow by n (9/10 input, 1/10
//     output), told in an event; then the result "echo: TOKENS n"
//   - "TOKENS_BLOCK n": as TOKENS, then as BLOCK
//
// An output schema told at the end of the prompt (output.go) is not its
// last line. Every other turn is acknowledged (OnAccepted) right after OnSent. A new
// thread is named to OnThread before anything else; a thread in lost
// (unless SameThread) is replaced by a new one, the Result saying why
// (Replaced "lost by the fake"). A summary turn waits for summaryGate to
// be closed when it is set.
type fakeBackend struct {
	codexchild.Codex // a Codex backend, as the seam asks it (sandboxed, Codex's settings, one child)

	mu          sync.Mutex
	reqs        []backend.TurnRequest
	threads     int
	running     map[string]chan struct{}
	release     chan string
	onResult    bool  // call OnResult from another goroutine before returning
	down        error // what Unavailable says: Codex is down
	lost        map[string]bool
	summaryGate chan struct{}
	tokens      map[string]int64 // each thread's token total so far (TOKENS)
}

// Unavailable is the proxy's check that Codex is up (availability).
func (f *fakeBackend) Unavailable() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{running: map[string]chan struct{}{}, release: make(chan string)}
}

func (f *fakeBackend) requests() []backend.TurnRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]backend.TurnRequest(nil), f.reqs...)
}

func (f *fakeBackend) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	if req.Release != nil {
		req.Release()
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	thread, replaced := req.ThreadID, ""
	if thread != "" && !req.SameThread && f.lost[thread] {
		thread, replaced = "", "lost by the fake"
	}
	if thread == "" {
		f.threads++
		thread = fmt.Sprintf("thread-%d", f.threads)
		if req.OnThread != nil {
			req.OnThread(thread)
		}
	}
	intr := make(chan struct{})
	f.running[thread] = intr
	replyNow, gate := f.onResult, f.summaryGate
	f.mu.Unlock()
	if gate != nil && strings.HasPrefix(req.Prompt, summaryPrompt) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() {
		f.mu.Lock()
		delete(f.running, thread)
		f.mu.Unlock()
	}()
	if req.OnSent != nil {
		req.OnSent()
	}
	prompt, _, _ := strings.Cut(req.Prompt, "\n\n<output-schema>") // an output schema told in the prompt is no command
	lines := strings.Split(strings.TrimSpace(prompt), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	died := &backend.ExitError{Status: backend.ExitStatus{Code: -1, Signal: "killed"}}
	if last == "DIE" {
		return nil, died
	}
	if req.OnAccepted != nil {
		req.OnAccepted()
	}
	if last == "DIE_ACCEPTED" {
		return nil, died
	}
	if h := req.Handler; h != nil {
		p, _ := json.Marshal(map[string]any{"msg": map[string]any{"type": "agent_message", "message": "working on " + last}})
		h.Event(backend.Event{ThreadID: thread, Method: "codex/event", Type: "agent_message", Params: p, Translate: codexchild.Translate})
	}
	if n, ok := tokensLine(last); ok && req.Handler != nil {
		f.mu.Lock()
		if f.tokens == nil {
			f.tokens = map[string]int64{}
		}
		f.tokens[thread] += n
		total := f.tokens[thread]
		f.mu.Unlock()
		u := backend.Usage{InputTokens: total * 9 / 10, OutputTokens: total - total*9/10, TotalTokens: total}
		req.Handler.Event(backend.Event{ThreadID: thread, Method: "session/update", Type: "usage",
			Neutral: &backend.Activity{Kind: backend.ActivityTokens, Usage: &u}})
		if strings.HasPrefix(last, "TOKENS_BLOCK") {
			last = "BLOCK"
		}
	}
	interrupted := &backend.Result{ThreadID: thread, Text: "interrupted", IsError: true, Status: "interrupted", Replaced: replaced}
	result := func(text string) (*backend.Result, error) {
		r := &backend.Result{ThreadID: thread, Text: text, Status: "completed", Replaced: replaced}
		if replyNow && req.OnResult != nil {
			done := make(chan struct{})
			go func() { req.OnResult(r); close(done) }() // as from codexchild's reader
			<-done
		}
		return r, nil
	}
	switch last {
	case "UNREACHABLE", "UNREACHABLE_APP":
		// Codex cannot reach its model: a retry notice, then the timeout.
		method, typ, params := "codex/event", "stream_error", `{"msg":{"type":"stream_error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}}`
		if last == "UNREACHABLE_APP" { // app-server's notification: its method is its type
			method, typ, params = "error", "error", `{"error":{"message":"stream disconnected before completion"},"willRetry":true,"threadId":"t"}`
		}
		if h := req.Handler; h != nil {
			h.Event(backend.Event{ThreadID: thread, Method: method, Type: typ, Params: json.RawMessage(params), Translate: codexchild.Translate})
		}
		return nil, &backend.TimeoutError{After: 2 * time.Second, ThreadID: thread}
	case "BLOCK":
		select {
		case text := <-f.release:
			return result(text)
		case <-intr:
			return interrupted, nil
		case <-ctx.Done():
			return interrupted, ctx.Err()
		}
	case "APPROVE":
		dec := make(chan backend.Decision, 1)
		a := backend.NewApproval(backend.Approval{ID: "approval-1", Kind: backend.ApprovalExec, ThreadID: thread,
			Command: "touch x", Cwd: req.Params.Cwd}, func(d backend.Decision) error {
			select {
			case dec <- d:
				return nil
			default:
				return backend.ErrAlreadyAnswered
			}
		})
		req.Handler.Approval(a)
		select {
		case d := <-dec:
			return result("decision: " + string(d.Kind) + " " + d.Reason)
		case <-intr:
			return interrupted, nil
		case <-ctx.Done():
			return interrupted, ctx.Err()
		}
	}
	return result("echo: " + last)
}

// tokensLine reads a "TOKENS n" or "TOKENS_BLOCK n" line.
func tokensLine(line string) (int64, bool) {
	word, n, ok := strings.Cut(line, " ")
	if !ok || word != "TOKENS" && word != "TOKENS_BLOCK" {
		return 0, false
	}
	v, err := strconv.ParseInt(n, 10, 64)
	return v, err == nil
}

func (f *fakeBackend) Interrupt(_ context.Context, threadID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.running[threadID]; ok {
		close(ch)
		delete(f.running, threadID)
	}
	return nil
}

func (f *fakeBackend) Status() backend.Status {
	return backend.Status{Protocol: string(codexchild.KindMCPServer), Started: true, Running: true}
}

// fakeCall is a CallRef that records what the turn did with it.
type fakeCall struct {
	mu        sync.Mutex
	releases  int
	progress  []string
	replyNow  bool // TryReplyNow succeeds
	replied   *TurnResult
	atCommit  string // the session's status when commit ran
	detailFor *Session
}

func (c *fakeCall) RequestID() json.RawMessage { return json.RawMessage(`7`) }
func (c *fakeCall) Progress(msg string) {
	c.mu.Lock()
	c.progress = append(c.progress, msg)
	c.mu.Unlock()
}

// WantsProgress reports true: the tests see every progress message.
func (c *fakeCall) WantsProgress() bool { return true }
func (c *fakeCall) Release() {
	c.mu.Lock()
	c.releases++
	c.mu.Unlock()
}
func (c *fakeCall) TryReplyNow(r *TurnResult, commit func()) bool {
	if !c.replyNow {
		return false
	}
	commit()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replied = r
	if c.detailFor != nil {
		c.atCommit = c.detailFor.Detail(0).Status
	}
	return true
}

// countingRegistry counts Update calls and can hold Add until released.
type countingRegistry struct {
	Registry
	mu      sync.Mutex
	updates int
	hold    chan struct{} // Add waits for it to close when set
	adding  chan struct{} // closed when an Add starts waiting
}

func (r *countingRegistry) Update(agentID string, fn func(*registry.Session)) (registry.Session, error) {
	r.mu.Lock()
	r.updates++
	r.mu.Unlock()
	return r.Registry.Update(agentID, fn)
}

func (r *countingRegistry) Add(s registry.Session) (registry.Session, error) {
	r.mu.Lock()
	hold, adding := r.hold, r.adding
	r.mu.Unlock()
	if hold != nil {
		close(adding)
		<-hold
	}
	return r.Registry.Add(s)
}

func (r *countingRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updates
}

type harness struct {
	t   *testing.T
	m   *Manager
	fb  *fakeBackend
	reg *countingRegistry
	dir string
}

// newHarness returns a Manager over a fake backend and a real registry in a
// temporary ATM home; modify (optional) changes its Config.
func newHarness(t *testing.T, modify func(*Config)) *harness {
	t.Helper()
	checkNoLeaks(t)
	home := t.TempDir()
	reg, err := registry.Open(registry.Config{Home: home, Team: "dev", Identity: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, fb: newFakeBackend(), reg: &countingRegistry{Registry: RegistryOf(reg)}, dir: home}
	cfg := Config{Home: home, Team: "dev", Backends: map[string]Backend{registry.DefaultKind: h.fb}, Registry: h.reg, Cwd: home, AutoMail: true, PersistThreads: true,
		ElicitationTimeout: 5 * time.Second, SummaryTimeout: 2 * time.Second}
	if modify != nil {
		modify(&cfg)
	}
	h.m, err = NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.m.Shutdown()
		h.m.Stop()
		if !h.m.Wait(5 * time.Second) {
			t.Error("jobs still running after Stop")
		}
		reg.Close()
	})
	return h
}

// create starts a session for identity.
func (h *harness) create(identity string) *Session {
	h.t.Helper()
	s, err := h.m.Create(context.Background(), CreateRequest{Identity: identity, Cwd: h.dir})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkNoLeaks fails the test if it leaves goroutines running.
func checkNoLeaks(t *testing.T) { leakcheck.Check(t, "session.") }

// codexOptions are the Codex options of a thread's parameters (zero when
// it has none).
func codexOptions(p backend.ThreadParams) codexchild.Options {
	o, _ := p.Options.(codexchild.Options)
	return o
}
