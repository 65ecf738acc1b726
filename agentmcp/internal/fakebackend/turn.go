package fakebackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// turn is one Turn in progress.
type turn struct {
	f        *Backend
	ctx      context.Context
	req      backend.TurnRequest
	lines    []string // the prompt's lines, without an output schema
	last     string   // the last of them: the turn's command
	thread   string
	replaced string
	intr     chan struct{}
	fromRead bool
}

// Turn runs a turn as its prompt's script says (see the package doc).
func (f *Backend) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	if req.Release != nil {
		req.Release() // before anything waits, as codexchild's backends do
	}
	prompt, _, _ := strings.Cut(req.Prompt, "\n\n<output-schema>") // an output schema told in the prompt is no command
	lines := strings.Split(strings.TrimSpace(prompt), "\n")
	t, res, err := f.begin(ctx, req, lines)
	if t == nil {
		return res, err
	}
	defer func() {
		f.mu.Lock()
		if f.running[t.thread] == t.intr {
			delete(f.running, t.thread)
		}
		f.mu.Unlock()
	}()
	return t.run()
}

// begin applies the thread policy to req and records it. It returns the
// turn to run, or the turn's outcome when it ends here.
func (f *Backend) begin(ctx context.Context, req backend.TurnRequest, lines []string) (*turn, *backend.Result, error) {
	last := strings.TrimSpace(lines[len(lines)-1])
	f.mu.Lock()
	if f.exit != nil {
		st := *f.exit
		f.mu.Unlock()
		return nil, nil, &backend.ExitError{Status: st}
	}
	thread, replaced := req.ThreadID, ""
	if thread != "" {
		known, tainted := f.known[thread], f.tainted[thread]
		switch {
		case req.SameThread:
		case f.cfg.Protocol == codexchild.KindAppServer:
			f.known[thread] = true // resumed
		case f.cfg.Protocol == codexchild.KindMCPServer && (!known || tainted):
			if req.Seed != "" && !known {
				req.Params.DeveloperInstructions = req.Seed + "\n\n" + req.Params.DeveloperInstructions
			}
			req.ThreadID, thread = "", "" // a fresh thread in its place
		case f.cfg.Protocol == "" && f.lost[thread]:
			thread, replaced = "", "lost by the fake" // the request names the thread it lost
		}
		if thread != "" && f.cfg.Protocol != "" {
			req.Prompt = req.Preamble + req.Prompt
		}
	}
	f.reqs = append(f.reqs, req)
	if last == "FAIL_START" && thread == "" {
		f.mu.Unlock() // nothing was sent, no thread made
		return nil, nil, errors.New(`start codex: exec: "codex": executable file not found in $PATH`)
	}
	t := &turn{f: f, ctx: ctx, req: req, lines: lines, last: last, thread: thread, replaced: replaced, intr: make(chan struct{}), fromRead: f.fromRead}
	var gate <-chan struct{}
	for prefix, g := range f.gates {
		if strings.HasPrefix(req.Prompt, prefix) {
			gate = g
		}
	}
	fresh := thread == ""
	if fresh {
		f.threads++
		t.thread = fmt.Sprintf("thread-%d", f.threads)
	} else if f.cfg.Protocol != "" && !f.known[thread] {
		f.mu.Unlock()
		res, err := t.result(&backend.Result{ThreadID: thread, Text: "Session not found for thread_id: " + thread, IsError: true, Status: "failed"})
		return nil, res, err
	}
	f.known[t.thread] = true
	f.running[t.thread] = t.intr
	f.mu.Unlock()
	if fresh && req.OnThread != nil {
		req.OnThread(t.thread)
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return t, nil, nil
}

// run is the turn after begin: the request sent, its events, and what its
// script says.
func (t *turn) run() (*backend.Result, error) {
	req, lines, last := t.req, t.lines, t.last
	if req.OnSent != nil {
		req.OnSent()
	}
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
	t.event("task_started", "")
	var n int
	if _, err := fmt.Sscanf(last, "EVENTS=%d", &n); err == nil {
		for range n {
			t.event("agent_message_content_delta", "")
		}
	}
	for _, l := range lines {
		if text, ok := strings.CutPrefix(l, "SAY "); ok && req.Handler != nil {
			req.Handler.Event(backend.Event{ThreadID: t.thread, Type: "agent_message",
				Neutral: &backend.Activity{Kind: backend.ActivityMessage, Text: text}})
		}
	}
	if fl, ok := req.Handler.(backend.Flusher); ok {
		fl.Flush() // the burst is over, as from codexchild's reader
	}
	if n, ok := tokensLine(last); ok {
		t.tokens(n)
		if strings.HasPrefix(last, "TOKENS_BLOCK") {
			last = "BLOCK"
		}
	}
	for _, l := range lines {
		if text, ok := strings.CutPrefix(l, "ANSWER="); ok {
			return t.done(text)
		}
	}
	var asks int
	switch _, err := fmt.Sscanf(last, "ASK %d", &asks); {
	case err == nil:
		return t.ask(asks)
	case last == "UNREACHABLE" || last == "UNREACHABLE_APP":
		return t.unreachable(last == "UNREACHABLE_APP")
	case strings.HasPrefix(last, "BLOCK"):
		return t.block()
	case last == "APPROVE":
		return t.approve()
	case last == "FAIL":
		return t.result(&backend.Result{ThreadID: t.thread, Text: "model error", IsError: true, Status: "failed", Replaced: t.replaced})
	}
	return t.done("echo: " + last)
}

// event tells the handler a codex/event of type typ (with a message when
// text is not empty), as mcp-server sends it.
func (t *turn) event(typ, text string) {
	h := t.req.Handler
	if h == nil {
		return
	}
	msg := map[string]any{"type": typ}
	if text != "" {
		msg["message"] = text
	}
	p, _ := json.Marshal(map[string]any{"_meta": map[string]any{"requestId": 99, "threadId": t.thread}, "id": "t", "msg": msg})
	h.Event(backend.Event{ThreadID: t.thread, Method: "codex/event", Type: typ, Params: p, Translate: codexchild.Translate})
}

// tokens adds n to the thread's token total and tells the total.
func (t *turn) tokens(n int64) {
	if t.req.Handler == nil {
		return
	}
	f := t.f
	f.mu.Lock()
	f.tokens[t.thread] += n
	total := f.tokens[t.thread]
	f.mu.Unlock()
	u := backend.Usage{InputTokens: total * 9 / 10, OutputTokens: total - total*9/10, TotalTokens: total}
	t.req.Handler.Event(backend.Event{ThreadID: t.thread, Method: "session/update", Type: "usage",
		Neutral: &backend.Activity{Kind: backend.ActivityTokens, Usage: &u}})
}

// done ends the turn with text: task_complete, then the result.
func (t *turn) done(text string) (*backend.Result, error) {
	t.event("task_complete", "")
	return t.result(&backend.Result{ThreadID: t.thread, Text: text, Status: "completed", Replaced: t.replaced})
}

// result returns r, after OnResult has had it from another goroutine when
// results go there first.
func (t *turn) result(r *backend.Result) (*backend.Result, error) {
	if !t.fromRead || t.req.OnResult == nil {
		return r, nil
	}
	done := make(chan struct{})
	go func() { t.req.OnResult(r); close(done) }() // as from codexchild's reader
	<-done
	f := t.f
	f.mu.Lock()
	watch := f.watch
	f.mu.Unlock()
	if watch {
		for range 20 {
			if t.ctx.Err() != nil {
				f.mu.Lock()
				f.cancelled++
				f.mu.Unlock()
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	return r, nil
}

// interrupted ends the turn as interrupted (err: why, if its context
// ended); under mcp-server its thread gives way to a fresh one next time.
func (t *turn) interrupted(err error) (*backend.Result, error) {
	if t.f.cfg.Protocol == codexchild.KindMCPServer {
		t.f.mu.Lock()
		t.f.tainted[t.thread] = true
		t.f.mu.Unlock()
	}
	return &backend.Result{ThreadID: t.thread, Text: "interrupted", IsError: true, Status: "interrupted", Replaced: t.replaced}, err
}

// block waits for Answer, an interrupt, the context's end or the turn's
// timeout (0: 300 s; negative: none).
func (t *turn) block() (*backend.Result, error) {
	var timeout <-chan time.Time
	after := t.req.Timeout
	if after == 0 {
		after = 300 * time.Second
	}
	if after > 0 {
		timer := time.NewTimer(after)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case text := <-t.f.answer:
		return t.done(text)
	case <-t.intr:
		return t.interrupted(nil)
	case <-t.ctx.Done():
		return t.interrupted(t.ctx.Err())
	case <-timeout:
		return nil, &backend.TimeoutError{After: after, ThreadID: t.thread, Partial: "partial text"}
	}
}

// unreachable tells the retry notice of a Codex that cannot reach its
// model (app-server's when app is set), then times out.
func (t *turn) unreachable(app bool) (*backend.Result, error) {
	method, typ, params := "codex/event", "stream_error", `{"msg":{"type":"stream_error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}}`
	if app { // app-server's notification: its method is its type
		method, typ, params = "error", "error", `{"error":{"message":"stream disconnected before completion"},"willRetry":true,"threadId":"t"}`
	}
	if h := t.req.Handler; h != nil {
		h.Event(backend.Event{ThreadID: t.thread, Method: method, Type: typ, Params: json.RawMessage(params), Translate: codexchild.Translate})
	}
	return nil, &backend.TimeoutError{After: 2 * time.Second, ThreadID: t.thread}
}

// approval asks one exec approval of command in cwd and waits for its
// decision; ok is false when the turn ended first (res, err: how).
func (t *turn) approval(command, cwd string) (d backend.Decision, ok bool, res *backend.Result, err error) {
	f := t.f
	f.mu.Lock()
	f.approvals++
	id := fmt.Sprintf("approval-%d", f.approvals)
	f.mu.Unlock()
	decided := make(chan backend.Decision, 1)
	a := backend.NewApproval(backend.Approval{ID: id, Kind: backend.ApprovalExec, ThreadID: t.thread, Command: command, Cwd: cwd},
		func(d backend.Decision) error {
			select {
			case decided <- d:
				return nil
			default:
				return backend.ErrAlreadyAnswered
			}
		})
	t.req.Handler.Approval(a)
	select {
	case d := <-decided:
		return d, true, nil, nil
	case <-t.intr:
		res, err = t.interrupted(nil)
	case <-t.ctx.Done():
		res, err = t.interrupted(t.ctx.Err())
	}
	return backend.Decision{}, false, res, err
}

// approve is APPROVE: one approval, and its decision as the answer.
func (t *turn) approve() (*backend.Result, error) {
	if t.req.Handler == nil {
		return nil, errors.New("fakebackend: APPROVE without a handler")
	}
	d, ok, res, err := t.approval("touch x", t.req.Params.Cwd)
	if !ok {
		return res, err
	}
	return t.done("decision: " + string(d.Kind) + " " + d.Reason)
}

// ask is ASK n: n approvals one after the other, their decisions as the
// answer. Without a handler it answers as the default does.
func (t *turn) ask(n int) (*backend.Result, error) {
	if t.req.Handler == nil {
		return t.done(fmt.Sprintf("echo: ASK %d", n))
	}
	var got []string
	for i := 1; i <= n; i++ {
		d, ok, res, err := t.approval(fmt.Sprintf("make %d", i), "/src")
		if !ok {
			return res, err
		}
		got = append(got, strings.TrimSuffix(string(d.Kind)+": "+d.Reason, ": "))
	}
	return t.done("decisions: " + strings.Join(got, "; "))
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
