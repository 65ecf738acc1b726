package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// MCP tasks (the io.modelcontextprotocol/tasks extension of 2026-07-28,
// SEP-2663). A codex or codex-reply call whose request lists the extension
// (and that is not background: true) answers at once with a task and runs
// its turn as a background turn does (session.Session.Start). The client
// polls tasks/get: working with a statusMessage that says what the agent
// does, input_required with the approval's form while an approval waits
// (when the request declared elicitation; else approval_fallback decides,
// as for any modern call without it), answered with tasks/update; then
// completed with exactly the CallToolResult the call would have given, or
// failed with its JSON-RPC error. tasks/cancel interrupts the turn as
// agent_interrupt does (a queued turn never runs) and the task ends
// cancelled.
//
// Task ids are 128 random bits; a stdio connection is one client, whose
// Env holds its tasks, so an id is bound to its connection. A task is kept
// while it runs (ttlMs null) and for TaskRetention after it ends (ttlMs
// then says when from its creation), the latest maxFinished of those that
// ended at most; an expired id is remembered as such for a clear error.

// TaskRetention is how long a finished task stays readable with tasks/get.
const TaskRetention = time.Hour

// TaskPollInterval is the polling interval a task suggests.
const TaskPollInterval = time.Second

// maxExpired bounds the expired task ids remembered.
const maxExpired = 1024

// maxFinished bounds the finished tasks kept (each holds its result): the
// oldest expire early when more end within TaskRetention.
const maxFinished = 256

// taskStore is this connection's tasks.
type taskStore struct {
	now func() time.Time

	mu      sync.Mutex // guards the fields below and every task's
	byID    map[string]*task
	expired map[string]bool
	order   []string // expired, oldest first (bounded)
}

// task is one codex or codex-reply call answered with a task.
type task struct {
	id      string
	agentID string
	s       *session.Session
	h       *session.Handle
	created time.Time
	reply   string // the tool that continues the session (Env.replyTool)

	// guarded by taskStore.mu:
	updated   time.Time
	sent      bool                        // the turn reached Codex (it runs)
	asks      map[string]session.Question // approvals waiting for tasks/update
	cancelled bool                        // tasks/cancel came
	ended     time.Time                   // zero while it runs
	status    string                      // once ended
	message   string                      // once ended
	result    *mcpconn.ToolResult
	err       error

	// firstTurn, for the first turn of a new session, sees how it ended
	// before it is recorded (discardFailedFirst). optional.
	firstTurn func(*session.TurnResult, error) (*session.TurnResult, error)
}

func newTaskStore(now func() time.Time) *taskStore {
	return &taskStore{now: now, byID: map[string]*task{}, expired: map[string]bool{}}
}

// runTask starts t on s as a task of call c and answers with the task.
func (e *Env) runTask(ctx context.Context, c *mcpconn.ToolCall, s *session.Session, t session.Turn) (*mcpconn.ToolResult, error) {
	mcpconn.Release(ctx)
	var b [16]byte
	_, _ = rand.Read(b[:])
	now := e.cfg.Now()
	tk := &task{id: "task-" + hex.EncodeToString(b[:]), agentID: s.Record().AgentID, s: s, created: now, updated: now,
		reply: e.replyTool(s.Record().Backend)}
	st := e.tasks
	t.Call = taskRef{c.RawID}
	t.Asker = session.NoAsker{} // approval_fallback decides
	if c.Elicitation {
		t.Asker = taskAsker{st, tk}
	}
	sent := t.OnSent
	t.OnSent = func() {
		st.mu.Lock()
		tk.sent, tk.updated = true, st.now()
		st.mu.Unlock()
		if sent != nil {
			sent()
		}
	}
	h, err := s.Start(t)
	if err != nil {
		return nil, err
	}
	tk.h = h
	st.mu.Lock()
	st.gcLocked()
	st.byID[tk.id] = tk // before the answer: a tasks/get for it resolves
	st.mu.Unlock()
	if slices.Contains(startTools, c.Name) && !c.Args.Has("agent_id") && !c.Args.Has("thread_id") {
		tk.firstTurn = e.discardFailedFirst(s)
	}
	go st.finish(tk)
	rec := s.Record()
	view := st.view(tk, e.cfg.Now())
	view.StatusMessage = fmt.Sprintf("[%s] turn started as a task: agent_id %s", rec.Identity, rec.AgentID)
	e.log.Info("codex turn runs as an MCP task", "task", tk.id, "agent_id", rec.AgentID, "tool", c.Name)
	return &mcpconn.ToolResult{Task: view}, nil
}

// finish waits for the task's turn and records how it ended.
func (st *taskStore) finish(tk *task) {
	<-tk.h.Done()
	res, err := tk.h.Result()
	identity := tk.s.Record().Identity
	if tk.firstTurn != nil {
		res, err = tk.firstTurn(res, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	tk.ended = st.now()
	tk.updated = tk.ended
	switch {
	case tk.cancelled: // interrupted, whatever the turn made of it
		tk.status = mcpconn.TaskCancelled
		tk.message = fmt.Sprintf("[%s] cancelled: the turn was interrupted; continue with %s (agent_id %s)", identity, tk.reply, tk.agentID)
	case err != nil:
		tk.status, tk.err = mcpconn.TaskFailed, err
		tk.message = fmt.Sprintf("[%s] failed: %v", identity, err)
	default:
		tk.status, tk.result = mcpconn.TaskCompleted, turnResult(res)
		tk.message = fmt.Sprintf("[%s] turn %s", identity, res.Status)
	}
}

// view is the task's state at now. The session is read after taskStore.mu
// is let go: the lock is a leaf.
func (st *taskStore) view(tk *task, now time.Time) *mcpconn.Task {
	st.mu.Lock()
	v := &mcpconn.Task{ID: tk.id, CreatedAt: tk.created, LastUpdatedAt: tk.updated, PollInterval: TaskPollInterval}
	ended, sent := !tk.ended.IsZero(), tk.sent
	if ended {
		v.Status, v.StatusMessage, v.Result, v.Err = tk.status, tk.message, tk.result, tk.err
		v.TTL = tk.ended.Sub(tk.created) + TaskRetention
	} else if len(tk.asks) > 0 {
		v.Status = mcpconn.TaskInputRequired
		v.InputRequests = map[string]mcpconn.InputRequest{}
		for id, q := range tk.asks {
			form := session.ApprovalForm(q)
			form["mode"] = "form" // required in 2026-07-28
			v.InputRequests[id] = mcpconn.InputRequest{Method: "elicitation/create", Params: form}
			v.StatusMessage = q.Message
		}
	}
	st.mu.Unlock()
	if v.Status != "" {
		return v
	}
	v.Status = mcpconn.TaskWorking
	d := tk.s.Detail(0)
	switch {
	case !sent && d.Queued > 0:
		v.StatusMessage = fmt.Sprintf("[%s] queued: the session has a turn running", d.Identity)
	case !sent:
		v.StatusMessage = fmt.Sprintf("[%s] starting the turn", d.Identity)
	default:
		v.StatusMessage = activityNote(d, now.Sub(tk.created))
	}
	return v
}

// lookup returns the task of id, or ErrTaskNotFound.
func (st *taskStore) lookup(id string) (*task, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.gcLocked()
	if tk := st.byID[id]; tk != nil {
		return tk, nil
	}
	if st.expired[id] {
		return nil, proxyerr.New(proxyerr.ErrTaskNotFound, map[string]any{"taskId": id},
			"Failed to retrieve task: Task has expired (a finished task is kept for %s; agent_status tells the session's last result)", TaskRetention)
	}
	return nil, proxyerr.New(proxyerr.ErrTaskNotFound, map[string]any{"taskId": id}, "Failed to retrieve task: Task not found")
}

// gcLocked forgets the tasks that ended more than TaskRetention ago, and
// the oldest finished ones beyond maxFinished.
func (st *taskStore) gcLocked() {
	now := st.now()
	var finished []*task
	for _, tk := range st.byID {
		if tk.ended.IsZero() {
			continue
		}
		if now.Sub(tk.ended) >= TaskRetention {
			st.expireLocked(tk)
			continue
		}
		finished = append(finished, tk)
	}
	if len(finished) > maxFinished {
		slices.SortFunc(finished, func(a, b *task) int { return a.ended.Compare(b.ended) })
		for _, tk := range finished[:len(finished)-maxFinished] {
			st.expireLocked(tk)
		}
	}
}

func (st *taskStore) expireLocked(tk *task) {
	delete(st.byID, tk.id)
	st.expired[tk.id] = true
	st.order = append(st.order, tk.id)
	if len(st.order) > maxExpired {
		delete(st.expired, st.order[0])
		st.order = st.order[1:]
	}
}

// GetTask is tasks/get: the task's state now.
func (e *Env) GetTask(_ context.Context, id string) (*mcpconn.Task, error) {
	tk, err := e.tasks.lookup(id)
	if err != nil {
		return nil, err
	}
	return e.tasks.view(tk, e.cfg.Now()), nil
}

// UpdateTask is tasks/update: each response whose key is an approval the
// task waits for answers it (as an elicitation result would); other keys
// are ignored, as the extension asks.
func (e *Env) UpdateTask(_ context.Context, id string, responses json.RawMessage) error {
	tk, err := e.tasks.lookup(id)
	if err != nil {
		return err
	}
	var rs map[string]json.RawMessage
	if err := json.Unmarshal(responses, &rs); err != nil {
		return proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "inputResponses"}, "inputResponses: %v", err)
	}
	e.tasks.mu.Lock()
	var offers []func()
	for key, raw := range rs {
		q, ok := tk.asks[key]
		if !ok || q.Offer == nil {
			e.log.Debug("tasks/update: no such input request outstanding; ignored", "task", id, "key", key)
			continue
		}
		an := session.ElicitAnswer(raw)
		offers = append(offers, func() { q.Offer(an) })
	}
	e.tasks.mu.Unlock()
	for _, offer := range offers {
		offer()
	}
	return nil
}

// CancelTask is tasks/cancel: the turn is interrupted as agent_interrupt
// does when it runs, never started when it waits in the queue. A task
// that has ended stays as it ended.
func (e *Env) CancelTask(ctx context.Context, id string) error {
	tk, err := e.tasks.lookup(id)
	if err != nil {
		return err
	}
	e.tasks.mu.Lock()
	over := !tk.ended.IsZero()
	running := tk.sent || len(tk.asks) > 0 // its turn is the session's running one
	if !over {
		tk.cancelled = true
		tk.updated = e.cfg.Now()
	}
	e.tasks.mu.Unlock()
	if over {
		return nil
	}
	e.log.Info("tasks/cancel: interrupting the task's turn", "task", id, "agent_id", tk.agentID, "running", running)
	if running {
		if _, err := tk.s.Interrupt(ctx); err != nil {
			e.log.Info("tasks/cancel: interrupt", "task", id, "err", err)
		}
	}
	tk.h.Cancel()
	return nil
}

// taskRef is a task's turn's CallRef: its events name the request that
// made the task, which has been answered (no progress, nothing to release).
type taskRef struct{ id json.RawMessage }

func (r taskRef) RequestID() json.RawMessage                 { return r.id }
func (taskRef) WantsProgress() bool                          { return false }
func (taskRef) Progress(string)                              {}
func (taskRef) Release()                                     {}
func (taskRef) TryReplyNow(*session.TurnResult, func()) bool { return false }

// taskAsker is a task's turn's Asker: an approval waits in the task
// (input_required, its form in inputRequests) until tasks/update answers
// it with q.Offer, or it is answered otherwise (ctx ends then).
type taskAsker struct {
	st *taskStore
	tk *task
}

func (taskAsker) CanAsk() bool { return true }

func (a taskAsker) Ask(ctx context.Context, q session.Question) (session.Answer, error) {
	a.st.mu.Lock()
	if a.tk.asks == nil {
		a.tk.asks = map[string]session.Question{}
	}
	a.tk.asks[q.ApprovalID] = q
	a.tk.updated = a.st.now()
	a.st.mu.Unlock()
	<-ctx.Done()
	a.st.mu.Lock()
	delete(a.tk.asks, q.ApprovalID)
	a.tk.updated = a.st.now()
	a.st.mu.Unlock()
	return session.Answer{}, ctx.Err()
}

// discardFailedFirst is the end of a new session's first turn made into a
// task, as codex does for one it waits for: a first turn that failed (an
// error other than a timeout or a cancel), or that Codex refused without
// a thread (an isError result), keeps no session and frees its identity;
// the answer says so.
func (e *Env) discardFailedFirst(s *session.Session) func(*session.TurnResult, error) (*session.TurnResult, error) {
	return func(res *session.TurnResult, err error) (*session.TurnResult, error) {
		refused := err == nil && res != nil && res.IsError && res.ThreadID == ""
		failed := err != nil && !errors.Is(err, proxyerr.ErrRequestTimeout) && !errors.Is(err, context.Canceled)
		if !refused && !failed {
			return res, err
		}
		why := err
		if refused {
			why = errors.New(res.Text)
		}
		if !e.m.Discard(context.Background(), s, why) {
			return res, err
		}
		note := fmt.Sprintf(" (no session was kept: identity %q is free)", s.Record().Identity)
		var pe *proxyerr.Error
		switch {
		case refused:
			r := *res
			r.Text += note
			return &r, nil
		case errors.As(err, &pe):
			c := *pe
			c.Msg += note
			return nil, &c
		}
		return nil, fmt.Errorf("%w%s", err, note)
	}
}
