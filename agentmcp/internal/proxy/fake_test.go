package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// fakeBackend is an in-process backend.Backend for unit tests of the
// proxy's logic. It follows the thread policy of codexchild's backends: on
// mcp-server a thread it never ran, or whose last turn was interrupted,
// gives way to a fresh thread; on app-server such a thread is "resumed".
// The last line of the prompt picks the behaviour:
//   - default: "MOCK_REPLY: <last line>"
//   - "SLOW": waits until interrupted or ctx ends
//   - "APPROVE": asks an exec approval and reports the decision
//   - "EVENTS=<n>": sends n events first
//   - "FAIL": an isError result
type fakeBackend struct {
	codexchild.Codex // a Codex backend, as the seam asks it
	kind             codexchild.Kind

	mu       sync.Mutex
	requests []backend.TurnRequest
	threads  map[string]bool
	tainted  map[string]bool
	running  map[string]chan struct{} // thread → interrupt
	nextID   int
	closed   bool
	// watchAnswered: after OnResult, watch the turn's context for a while
	// and count in cancelledAfterAnswer the turns cancelled meanwhile.
	watchAnswered        bool
	cancelledAfterAnswer int
	exit                 *backend.ExitStatus
	// onNotify, when set, is what Notify does (a notification passed on
	// to the child).
	onNotify func(context.Context, *jsonrpcframe.Message) error
}

func newFakeBackend(kind codexchild.Kind) *fakeBackend {
	return &fakeBackend{kind: kind, threads: map[string]bool{}, tainted: map[string]bool{}, running: map[string]chan struct{}{}}
}

func (f *fakeBackend) Kind() codexchild.Kind { return f.kind }

func (f *fakeBackend) turns() []backend.TurnRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]backend.TurnRequest(nil), f.requests...)
}

func (f *fakeBackend) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	if req.Release != nil {
		req.Release() // before anything waits, as codexchild's backends do
	}
	f.mu.Lock()
	if f.exit != nil {
		st := *f.exit
		f.mu.Unlock()
		return nil, &backend.ExitError{Status: st}
	}
	if req.ThreadID != "" {
		known, tainted := f.threads[req.ThreadID], f.tainted[req.ThreadID]
		switch {
		case req.SameThread, f.kind == codexchild.KindAppServer && known:
		case f.kind == codexchild.KindAppServer:
			f.threads[req.ThreadID] = true // resumed
		case !known || tainted:
			if req.Seed != "" && !known {
				req.Params.DeveloperInstructions = req.Seed + "\n\n" + req.Params.DeveloperInstructions
			}
			req.ThreadID = "" // a fresh thread in its place
		}
		if req.ThreadID != "" {
			req.Prompt = req.Preamble + req.Prompt
		}
	}
	f.requests = append(f.requests, req)
	// Codex's own results go to OnResult first, on another goroutine (the
	// reader in codexchild), as the mcp-server backend does.
	result := func(r *backend.Result) (*backend.Result, error) {
		if req.OnResult != nil && f.kind == codexchild.KindMCPServer {
			done := make(chan struct{})
			go func() { req.OnResult(r); close(done) }()
			<-done
			f.mu.Lock()
			watch := f.watchAnswered
			f.mu.Unlock()
			if watch {
				// An answered turn is over: the end of the client's
				// request must not cancel it.
				for range 20 {
					if ctx.Err() != nil {
						f.mu.Lock()
						f.cancelledAfterAnswer++
						f.mu.Unlock()
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
		}
		return r, nil
	}
	thread := req.ThreadID
	if thread == "" {
		f.nextID++
		thread = fmt.Sprintf("0199aaaa-0000-7000-8000-%012d", f.nextID)
		f.threads[thread] = true
	} else if !f.threads[thread] {
		f.mu.Unlock()
		return result(&backend.Result{ThreadID: thread, Text: "Session not found for thread_id: " + thread, IsError: true, Status: "failed"})
	}
	f.threads[thread] = true
	intr := make(chan struct{})

	f.running[thread] = intr
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.running, thread)
		f.mu.Unlock()
	}()
	interrupted := func(err error) (*backend.Result, error) {
		f.mu.Lock()
		if f.kind == codexchild.KindMCPServer {
			f.tainted[thread] = true
		}
		f.mu.Unlock()
		return &backend.Result{ThreadID: thread, Text: "interrupted", IsError: true, Status: "interrupted"}, err
	}
	lines := strings.Split(strings.TrimSpace(req.Prompt), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	h := req.Handler
	event := func(typ string) {
		if h == nil {
			return
		}
		p, _ := json.Marshal(map[string]any{"_meta": map[string]any{"requestId": 99, "threadId": thread}, "id": "t", "msg": map[string]any{"type": typ}})
		h.Event(backend.Event{ThreadID: thread, Method: "codex/event", Type: typ, Params: p, Translate: codexchild.Translate})
	}
	event("task_started")
	var n int
	if _, err := fmt.Sscanf(last, "EVENTS=%d", &n); err == nil {
		for range n {
			event("agent_message_content_delta")
		}
	}
	// The burst is over: a Flusher hears so, as from codexchild's reader.
	if f, ok := h.(backend.Flusher); ok {
		f.Flush()
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = 300 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	switch {
	case strings.HasPrefix(last, "SLOW"):
		select {
		case <-intr:
			return interrupted(nil)
		case <-ctx.Done():
			return interrupted(ctx.Err())
		case <-timer.C:
			return nil, &backend.TimeoutError{After: timeout, ThreadID: thread, Partial: "partial text"}
		}
	case strings.HasPrefix(last, "APPROVE"):
		dec := make(chan backend.Decision, 1)
		a := backend.NewApproval(backend.Approval{ID: "approval-1", Kind: backend.ApprovalExec, ThreadID: thread,
			Command: "touch x", Cwd: req.Params.Cwd, Reason: "needs it"}, func(d backend.Decision) error {
			select {
			case dec <- d:
				return nil
			default:
				return backend.ErrAlreadyAnswered
			}
		})
		if h == nil {
			return nil, fmt.Errorf("no handler")
		}
		h.Approval(a)
		select {
		case d := <-dec:
			event("task_complete")
			return result(&backend.Result{ThreadID: thread, Text: "decision: " + string(d.Kind) + " " + d.Reason, Status: "completed"})
		case <-intr:
			return interrupted(nil)
		case <-ctx.Done():
			return interrupted(ctx.Err())
		}
	case last == "FAIL":
		return result(&backend.Result{ThreadID: thread, Text: "model error", IsError: true, Status: "failed"})
	}
	event("task_complete")
	return result(&backend.Result{ThreadID: thread, Text: "MOCK_REPLY: " + last, Status: "completed"})
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

func (f *fakeBackend) Forward(_ context.Context, req *jsonrpcframe.Message) (*jsonrpcframe.Message, error) {
	if f.kind != codexchild.KindMCPServer {
		return nil, backend.ErrUnsupported
	}
	if req.Method == "echo" {
		return jsonrpcframe.NewResponse(jsonrpcframe.IntID(1), json.RawMessage(req.Params))
	}
	return &jsonrpcframe.Message{Versioned: true, ID: jsonrpcframe.IntID(1),
		Error: json.RawMessage(`{"code":-32601,"message":"method not found: ` + req.Method + `"}`)}, nil
}

func (f *fakeBackend) Notify(ctx context.Context, m *jsonrpcframe.Message) error {
	f.mu.Lock()
	h := f.onNotify
	f.mu.Unlock()
	if h != nil {
		return h(ctx, m)
	}
	return nil
}

func (f *fakeBackend) Status() backend.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return backend.Status{Protocol: string(f.kind), Started: true, Running: f.exit == nil && !f.closed, PID: 4242, Version: "fake", Exit: f.exit}
}

func (f *fakeBackend) Close(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
