package codexchild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// This file is the turn side of AppServer: thread/start, thread/resume,
// turn/start, turn/interrupt, turn/steer and the Result made from
// turn/completed.

// errTurnTimeout is the cause of a Turn's context when its timeout expired.
var errTurnTimeout = errors.New("codexchild: turn timeout")

// appTurn is the state of a turn on app-server.
//
// The fields under "guarded by AppServer.mu" are written by the reader and
// by abandon. mu serialises delivery to the handler exactly as turn.mu does
// for MCPServer: the reader holds it while calling the handler, and the Turn
// goroutine takes it once after setting closed, so no callback runs after
// Turn has returned.
type appTurn struct {
	handler  backend.Handler
	threadID string
	done     chan struct{} // closed by finish
	doneOnce sync.Once
	started  chan struct{} // closed when the Codex turn id is known
	startOne sync.Once
	stop     chan abandonKind // buffered 1: abandon tells the waiting Turn
	codexEnd chan struct{}    // closed when the turn ended in Codex and waits for its sub-agents
	// resumable: a "thread not found" answer to turn/start makes Turn
	// resume the thread and retry.
	resumable bool
	// onAccepted is TurnRequest.OnAccepted (once over the retries);
	// accept calls it.
	onAccepted func()

	// guarded by AppServer.mu
	turnID        string
	abandoned     abandonKind
	interruptSent bool
	completed     json.RawMessage     // turn/completed params
	startErr      *jsonrpcframe.Error // the error response to turn/start
	startErrRaw   json.RawMessage     // its raw error member
	err           error               // the child died
	aborted       bool                // an approval was answered with Abort
	subs          []*subAgent         // its agent's own sub-agents, in order (appsubagents.go)
	subWait       bool                // ended in Codex while subs run; codexEnd is closed

	closed  atomic.Bool
	over    atomic.Bool // Turn is returning: no OnAccepted any more
	mu      sync.Mutex
	texts   []string                   // agentMessage texts, in order
	delta   strings.Builder            // deltas of the agent message in progress
	changes map[string]json.RawMessage // fileChange item id → its changes
	errMsg  string                     // the last error notification's message
}

func newAppTurn(threadID string, h backend.Handler) *appTurn {
	return &appTurn{handler: h, threadID: threadID, done: make(chan struct{}), started: make(chan struct{}), stop: make(chan abandonKind, 1),
		codexEnd: make(chan struct{})}
}

// accept tells the caller that the child answered turn/start (OnAccepted),
// under t.mu and never after Turn returned (over), even for a turn
// abandoned meanwhile: Turn waits for it a while (awaitAccepted).
func (t *appTurn) accept() {
	if t.onAccepted == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.over.Load() {
		t.onAccepted()
	}
}

// awaitAccepted is the end of a turn abandoned (interrupted, timed out)
// before the child answered its turn/start: it waits, at most acceptWait,
// for that answer or the child's death (which sets t.err), so that the
// caller of OnAccepted learns whether Codex had the turn.
func (b *AppServer) awaitAccepted(t *appTurn) {
	if t.onAccepted == nil {
		return
	}
	timer := time.NewTimer(acceptWait)
	defer timer.Stop()
	select {
	case <-t.started:
	case <-t.done:
	case <-timer.C:
	}
}

// finish ends the turn for its waiters.
func (t *appTurn) finish() { t.doneOnce.Do(func() { close(t.done) }) }

// setTurnIDLocked records the Codex turn id; AppServer.mu is held.
func (t *appTurn) setTurnIDLocked(id string) {
	if id == "" || t.turnID != "" {
		return
	}
	t.turnID = id
	t.startOne.Do(func() { close(t.started) })
}

// partial returns the agent text seen so far; t.mu is held.
func (t *appTurn) partial() string {
	parts := t.texts
	if t.delta.Len() > 0 {
		parts = append(parts[:len(parts):len(parts)], t.delta.String())
	}
	return strings.Join(parts, "\n")
}

// Turn runs one turn: thread/start for a new thread (with req.Params),
// thread/resume first when req.Resume is set and this process has not seen
// the thread (again with req.Params: Codex does not persist a thread's
// config, such as its MCP servers), then turn/start. The Result is made from
// turn/completed: the last agentMessage of a completed turn, or IsError with
// Codex's error message for a failed one. A refused request (a bad
// parameter, turn/start on a thread given SameThread that this process
// does not have) is an IsError Result with Codex's message. A thread Codex
// refuses to resume (no rollout of it in its home) is replaced by a new
// one seeded with req.Seed (Result.Replaced says why). When turn/start
// says "thread not found" for a thread that is not SameThread, the thread
// is resumed (or replaced) and the turn retried once. A turn on a thread whose
// turn is still running fails with ErrThreadBusy; one whose previous turn
// was just interrupted first waits (briefly) for Codex to end it.
func (b *AppServer) Turn(ctx context.Context, req backend.TurnRequest) (*backend.Result, error) {
	if req.Release != nil {
		req.Release() // a turn here starts with a round trip or two
	}
	if err := checkOutputSchema(req); err != nil {
		return nil, err
	}
	if err := b.ensureStarted(ctx); err != nil {
		return nil, err
	}
	timeout := b.cfg.effectiveTimeout(req.Timeout)
	tctx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		tctx, cancel = context.WithTimeoutCause(ctx, timeout, errTurnTimeout)
	}
	defer cancel()
	fail := func(threadID string, err error) (*backend.Result, error) {
		if errors.Is(context.Cause(tctx), errTurnTimeout) {
			return nil, &backend.TimeoutError{After: timeout, ThreadID: threadID}
		}
		return nil, err
	}

	threadID := req.ThreadID
	resume := threadID != "" && !req.SameThread && !b.isLoaded(threadID)
	prompt := req.Prompt
	if threadID != "" {
		prompt = b.notes.take(threadID) + req.Preamble + req.Prompt
	}
	var res *backend.Result
	var err error
	replaced := ""
	onThread := onceString(req.OnThread)
	switch {
	case threadID == "":
		threadID, res, err = b.startThread(tctx, req.Params)
		if err == nil && res == nil {
			onThread(threadID)
		}
	case resume:
		threadID, replaced, res, err = b.resumeOrReplace(tctx, req, threadID, onThread)
		if replaced != "" {
			prompt = req.Prompt // a new thread: its context is in its instructions
		}
	}
	if err != nil {
		return fail(threadID, err)
	}
	if res != nil {
		return res, nil
	}
	retry := !req.SameThread && replaced == ""
	var accepted func()
	if req.OnAccepted != nil {
		accepted = onceFunc(req.OnAccepted)
	}
	for {
		t := newAppTurn(threadID, req.Handler)
		t.resumable, t.onAccepted = retry, accepted
		if err := b.register(tctx, t); err != nil {
			return fail(threadID, err)
		}
		params := map[string]any{"threadId": threadID, "input": []map[string]any{{"type": "text", "text": prompt}}}
		if len(req.OutputSchema) > 0 {
			params["outputSchema"] = req.OutputSchema
		}
		if _, err := b.send("turn/start", params, false, t); err != nil {
			b.unregister(t)
			return nil, err
		}
		if req.OnSent != nil {
			req.OnSent()
			req.OnSent = nil // once, even when the turn is retried after a resume
		}
		res, err := b.waitTurn(ctx, tctx, t, timeout)
		if res != nil {
			res.Replaced = replaced
		}
		if err != nil || res != nil {
			return res, err
		}
		// turn/start said "thread not found" for a thread the caller wants
		// resumed: this process does not have it (any more). Resume once.
		retry = false
		b.log.Info("codex thread not loaded; resuming it", "thread", threadID)
		threadID, replaced, res, err = b.resumeOrReplace(tctx, req, threadID, onThread)
		if err != nil {
			return fail(threadID, err)
		}
		if res != nil {
			return res, nil
		}
		if replaced != "" {
			prompt = req.Prompt
		}
	}
}

// resumeOrReplace resumes threadID for req; when Codex refuses (no rollout
// of the thread in its home, say), it starts a new thread in its place
// with req.Seed in front of the developer instructions, and reports why
// in replaced. res is an IsError Result when neither worked.
func (b *AppServer) resumeOrReplace(ctx context.Context, req backend.TurnRequest, threadID string, onThread func(string)) (id, replaced string, res *backend.Result, err error) {
	res, err = b.resumeThread(ctx, threadID, req.Params)
	if err != nil || res == nil {
		return threadID, "", res, err
	}
	replaced = "Codex could not resume it: " + res.Text
	b.log.Info("continuing the session on a new Codex thread", "old_thread", threadID, "reason", replaced)
	p := req.Params
	if req.Seed != "" {
		p.DeveloperInstructions = req.Seed + "\n\n" + p.DeveloperInstructions
	}
	id, res, err = b.startThread(ctx, p)
	if err != nil {
		return threadID, "", nil, err
	}
	if res != nil {
		res.Text = replaced + "; a new thread was refused too: " + res.Text
		return threadID, "", res, nil
	}
	onThread(id)
	return id, replaced, nil, nil
}

// onceString returns f as a function that calls f at most once (nil f: a
// function that does nothing).
func onceString(f func(string)) func(string) {
	if f == nil {
		return func(string) {}
	}
	var once sync.Once
	return func(s string) { once.Do(func() { f(s) }) }
}

// waitTurn waits for the end of a registered turn whose turn/start was
// sent. It returns (nil, nil) when turn/start failed with "thread not found"
// on a resumable turn: the caller resumes and retries.
func (b *AppServer) waitTurn(ctx, tctx context.Context, t *appTurn, timeout time.Duration) (*backend.Result, error) {
	byCtx, waited, subs := false, false, subWait{}
	stopped := subsDone // how an Interrupt or the ctx stopped the turn
	select {
	case <-t.done:
	case <-t.codexEnd: // ended in Codex; its sub-agents still run
		waited = true
		subs = b.waitSubAgents(ctx, tctx, t)
		byCtx = subs.end == subsCancelled
	case <-t.stop: // Interrupt
		stopped = subsInterrupted
	case <-tctx.Done():
		stopped = subsCancelled
		if errors.Is(context.Cause(tctx), errTurnTimeout) {
			stopped = subsTimeout
		}
		if !b.inSubWait(t) {
			how := abandonInterrupt
			if stopped == subsTimeout {
				how = abandonTimeout
				b.log.Warn("codex turn timed out; interrupting it", "thread", t.threadID, "after", timeout)
			} else {
				byCtx = true
			}
			b.abandon(t, how) // (if the turn ends in Codex meanwhile, this stops its wait instead)
		}
	}
	if stopped != subsDone {
		// The reader closes codexEnd a moment after it has set subWait: an
		// Interrupt or the ctx in between stops the wait that has just
		// begun. Before the turn's end in Codex, an Interrupt or the ctx
		// interrupts the sub-agents too (a timeout does not, as in the
		// wait).
		if waited = b.inSubWait(t); waited || stopped != subsTimeout {
			subs = b.endSubWait(t, stopped)
			byCtx = stopped == subsCancelled
		}
	}
	b.mu.Lock()
	unanswered := t.abandoned != notAbandoned && t.turnID == "" && t.startErr == nil
	b.mu.Unlock()
	if unanswered {
		b.awaitAccepted(t)
	}
	// Barrier: after this no callback of this turn runs.
	t.over.Store(true)
	t.closed.Store(true)
	t.mu.Lock()
	partial, errMsg := t.partial(), t.errMsg
	lastText := ""
	if len(t.texts) > 0 {
		lastText = t.texts[len(t.texts)-1]
	}
	t.mu.Unlock()
	b.mu.Lock()
	turnID, completed, how, aborted := t.turnID, t.completed, t.abandoned, t.aborted
	startErr, startErrRaw, childErr := t.startErr, t.startErrRaw, t.err
	b.mu.Unlock()

	var res *backend.Result
	switch {
	case childErr != nil && !waited:
		return nil, childErr
	case startErr != nil && isThreadNotFound(startErr) && t.resumable:
		return nil, nil
	case startErr != nil:
		return &backend.Result{ThreadID: t.threadID, Text: startErr.Message, IsError: true, Status: "failed", Raw: startErrRaw}, nil
	case how == abandonTimeout:
		return nil, &backend.TimeoutError{After: timeout, ThreadID: t.threadID, Partial: partial}
	case completed != nil:
		res = appResult(completed, t.threadID, turnID, lastText, errMsg, partial, aborted)
	default:
		res = &backend.Result{ThreadID: t.threadID, TurnID: turnID, Text: "codex turn interrupted", IsError: true, Status: "interrupted", Partial: partial}
	}
	b.subAgentsResult(t, res, subs, waited)
	if byCtx {
		return res, ctx.Err()
	}
	return res, nil
}

// inSubWait reports whether t has ended in Codex and waits for its
// sub-agents (subWait; once set, t is never abandoned).
func (b *AppServer) inSubWait(t *appTurn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return t.subWait
}

// threadParams maps ThreadParams onto thread/start (and thread/resume)
// params. CompactPrompt and Profile have no member of their own; they
// become the config overrides compact_prompt and profile (unless Config
// sets them); ToolServers become mcp_servers entries (codexConfig). Config
// is copied, never changed.
func threadParams(p backend.ThreadParams) map[string]any {
	out, o := map[string]any{}, optionsOf(p)
	for k, v := range map[string]string{
		"cwd":                   p.Cwd,
		"model":                 p.Model,
		"approvalPolicy":        o.ApprovalPolicy,
		"sandbox":               o.Sandbox,
		"baseInstructions":      p.BaseInstructions,
		"developerInstructions": p.DeveloperInstructions,
	} {
		if v != "" {
			out[k] = v
		}
	}
	cfg := codexConfig(p) // a copy, with the tool servers (toolservers.go)
	for k, v := range map[string]string{"compact_prompt": o.CompactPrompt, "profile": o.Profile} {
		if v == "" {
			continue
		}
		if cfg == nil {
			cfg = map[string]any{}
		}
		if _, ok := cfg[k]; !ok {
			cfg[k] = v
		}
	}
	if len(cfg) > 0 {
		out["config"] = cfg
	}
	return out
}

// startThread sends thread/start. A refusal is an IsError Result.
func (b *AppServer) startThread(ctx context.Context, p backend.ThreadParams) (string, *backend.Result, error) {
	p, err := b.viaHTTP(ctx, p) // on a host (hosttools.go)
	if err != nil {
		return "", nil, err
	}
	resp, err := b.roundTrip(ctx, "thread/start", threadParams(p))
	if err != nil {
		return "", nil, err
	}
	if e := resp.Err(); e != nil {
		return "", &backend.Result{Text: e.Message, IsError: true, Status: "failed", Raw: resp.Error}, nil
	}
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil || r.Thread.ID == "" {
		return "", nil, fmt.Errorf("codexchild: thread/start: bad result %.200s", resp.Result)
	}
	b.mu.Lock()
	b.loaded[r.Thread.ID] = true
	b.models[r.Thread.ID] = r.Model
	b.mu.Unlock()
	b.log.Info("codex thread started", "thread", r.Thread.ID)
	return r.Thread.ID, nil, nil
}

// resumeThread sends thread/resume (without the history: excludeTurns). A
// refusal ("no rollout found for thread id ...") is an IsError Result.
func (b *AppServer) resumeThread(ctx context.Context, threadID string, p backend.ThreadParams) (*backend.Result, error) {
	p, err := b.viaHTTP(ctx, p) // on a host (hosttools.go)
	if err != nil {
		return nil, err
	}
	params := threadParams(p)
	params["threadId"] = threadID
	params["excludeTurns"] = true
	resp, err := b.roundTrip(ctx, "thread/resume", params)
	if err != nil {
		return nil, err
	}
	if e := resp.Err(); e != nil {
		b.log.Info("codex refused to resume the thread", "thread", threadID, "err", e.Message)
		return &backend.Result{ThreadID: threadID, Text: e.Message, IsError: true, Status: "failed", Raw: resp.Error}, nil
	}
	var r struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(resp.Result, &r) // the model is all that is read, and optional
	b.mu.Lock()
	b.loaded[threadID] = true
	b.models[threadID] = r.Model
	b.mu.Unlock()
	b.log.Info("codex thread resumed", "thread", threadID)
	return nil, nil
}

// isLoaded reports whether this process has started or resumed the thread.
func (b *AppServer) isLoaded(threadID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.loaded[threadID]
}

// isThreadNotFound reports whether turn/start was refused because the
// process does not know the thread ("thread not found: <id>").
func isThreadNotFound(e *jsonrpcframe.Error) bool {
	return strings.HasPrefix(e.Message, "thread not found")
}

// register makes t the running turn of its thread. If the thread's previous
// turn was abandoned and Codex has not ended it yet, it waits for that (at
// most drainWait); a running turn gives ErrThreadBusy.
func (b *AppServer) register(ctx context.Context, t *appTurn) error {
	for {
		b.mu.Lock()
		if b.exitErr != nil {
			defer b.mu.Unlock()
			return b.exitErr
		}
		old := b.turns[t.threadID]
		if old == nil {
			b.turns[t.threadID] = t
			b.mu.Unlock()
			return nil
		}
		draining := old.abandoned != notAbandoned
		b.mu.Unlock()
		if !draining {
			return fmt.Errorf("codexchild: turn on thread %s: %w", t.threadID, backend.ErrThreadBusy)
		}
		b.log.Info("waiting for the interrupted turn of the thread to end", "thread", t.threadID)
		timer := time.NewTimer(drainWait)
		select {
		case <-old.done:
			timer.Stop()
		case <-timer.C:
			return fmt.Errorf("codexchild: turn on thread %s: the interrupted turn has not ended after %s: %w", t.threadID, drainWait, backend.ErrThreadBusy)
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("codexchild: turn on thread %s: %w", t.threadID, context.Cause(ctx))
		}
	}
}

// unregister removes t from turns if it is still there.
func (b *AppServer) unregister(t *appTurn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.turns[t.threadID] == t {
		delete(b.turns, t.threadID)
	}
}

// abandon ends t for its caller without waiting for Codex: the Turn returns
// at once, turn/interrupt is sent (now, or by the reader when the turn/start
// response brings the turn id), unanswered approvals are cancelled, and t
// stays in turns until Codex's turn/completed arrives.
func (b *AppServer) abandon(t *appTurn, kind abandonKind) {
	b.mu.Lock()
	if t.subWait && b.turns[t.threadID] == t {
		// Ended in Codex, waiting for its sub-agents: the wait stops and
		// interrupts them (waitSubAgents, or waitTurn when the wait has
		// only just begun).
		b.mu.Unlock()
		select {
		case t.stop <- kind:
		default:
		}
		return
	}
	if t.abandoned != notAbandoned || t.completed != nil || b.turns[t.threadID] != t {
		b.mu.Unlock()
		return
	}
	t.abandoned = kind
	send := t.turnID != "" && !t.interruptSent
	if send {
		t.interruptSent = true
	}
	turnID := t.turnID
	b.mu.Unlock()
	t.closed.Store(true)
	select {
	case t.stop <- kind:
	default:
	}
	reason := map[abandonKind]string{abandonInterrupt: "interrupted", abandonTimeout: "timed out"}[kind]
	b.log.Info("codex turn abandoned; interrupting it", "thread", t.threadID, "turn", turnID, "why", reason)
	if send {
		b.sendInterrupt(t.threadID, turnID)
	}
	b.answerLeftovers(t, backend.Decision{Kind: backend.Abort, Reason: "the turn was " + reason})
}

// sendInterrupt sends turn/interrupt; nobody waits for the answer (an
// error answer, "no active turn to interrupt", is logged by the reader).
func (b *AppServer) sendInterrupt(threadID, turnID string) {
	if _, err := b.send("turn/interrupt", map[string]any{"threadId": threadID, "turnId": turnID}, false, nil); err != nil {
		b.log.Warn("codex: sending turn/interrupt failed", "thread", threadID, "turn", turnID, "err", err)
	}
}

// Interrupt interrupts the running turn of a thread with turn/interrupt;
// the pending Turn returns at once with an interrupted IsError Result, and
// the sub-agents its agent started are interrupted too. A turn that has
// ended in Codex and waits for its sub-agents interrupts them instead (its
// answer is the Result's Partial). It is a no-op when the thread has no
// running turn.
func (b *AppServer) Interrupt(ctx context.Context, threadID string) error {
	b.mu.Lock()
	t := b.turns[threadID]
	b.mu.Unlock()
	if t != nil {
		b.abandon(t, abandonInterrupt)
	}
	return nil
}

// turnCompleted is the part of turn/completed's params the backend reads.
type turnCompleted struct {
	ThreadID string `json:"threadId"`
	Turn     struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
		Items []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"items"`
	} `json:"turn"`
}

// appResult makes the Result of a turn from its turn/completed params.
// lastText (the last agentMessage seen in events) and errMsg (the last error
// notification) stand in when turn/completed does not carry them.
func appResult(raw json.RawMessage, threadID, turnID, lastText, errMsg, partial string, aborted bool) *backend.Result {
	var tc turnCompleted
	_ = json.Unmarshal(raw, &tc)
	res := &backend.Result{ThreadID: threadID, TurnID: turnID, Status: tc.Turn.Status, Raw: raw}
	if tc.Turn.ID != "" {
		res.TurnID = tc.Turn.ID
	}
	text := lastText
	for _, it := range tc.Turn.Items {
		if it.Type == "agentMessage" {
			text = it.Text
		}
	}
	switch tc.Turn.Status {
	case "completed":
		res.Text = text
	case "interrupted":
		res.IsError, res.Partial = true, partial
		res.Text = "codex turn interrupted"
		if aborted {
			res.Text = "codex turn aborted (approval answered with abort)"
		}
	default: // "failed", or a status this backend does not know
		res.IsError = true
		switch {
		case tc.Turn.Error != nil && tc.Turn.Error.Message != "":
			res.Text = tc.Turn.Error.Message
		case errMsg != "":
			res.Text = errMsg
		default:
			res.Text = "codex turn " + tc.Turn.Status
		}
		if res.Status == "" {
			res.Status = "failed"
		}
	}
	return res
}
