package mcpconn

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// The MCP tasks extension (io.modelcontextprotocol/tasks, SEP-2663, an
// extension of the 2026-07-28 revision): a client that lists the extension
// in a request's clientCapabilities may get, instead of a tools/call
// result, a CreateTaskResult (resultType "task"); it then polls tasks/get,
// whose answer carries the status and, once the task is over, the result
// or the JSON-RPC error the call would have given; it answers the task's
// questions with tasks/update and stops it with tasks/cancel. The server
// decides per call whether to make a task (ToolResult.Task) and serves the
// three methods through a TaskHandler. tasks/result and tasks/list, from
// the experimental tasks of 2025-11-25, are not part of the extension; nor
// are tasks on legacy connections (no client uses them there: Claude Code
// 2.1.332 asks for tasks only on 2026-07-28 connections).

// TasksExtension is the tasks extension's name in capabilities.
const TasksExtension = "io.modelcontextprotocol/tasks"

// The statuses of a Task.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskHandler is optional on a Handler: the tasks extension's methods. A
// Conn whose Handler is one advertises the extension in server/discover.
// Each method runs on a goroutine of its own with a ctx that ends when the
// client cancels the request or the Conn is shutting down; an error is
// written as a JSON-RPC error (an unknown task: ErrTaskNotFound).
type TaskHandler interface {
	// GetTask returns the task's state now (tasks/get).
	GetTask(ctx context.Context, taskID string) (*Task, error)
	// UpdateTask answers the task's input requests (tasks/update):
	// responses is the inputResponses object, keyed as Task.InputRequests;
	// keys not outstanding are ignored.
	UpdateTask(ctx context.Context, taskID string, responses json.RawMessage) error
	// CancelTask asks the task to stop (tasks/cancel); cooperative: the
	// task may still end otherwise.
	CancelTask(ctx context.Context, taskID string) error
}

// Task is a task's state: the CreateTaskResult a call answers with
// (ToolResult.Task) and each tasks/get's answer.
type Task struct {
	ID            string
	Status        string // TaskWorking … TaskCancelled
	StatusMessage string // optional
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	// TTL is how long after CreatedAt the task may be forgotten. optional:
	// 0 means unlimited (ttlMs null).
	TTL time.Duration
	// PollInterval is the polling interval suggested. optional: 0 says none.
	PollInterval time.Duration
	// InputRequests are the questions waiting for tasks/update, keyed
	// uniquely over the task's life (TaskInputRequired).
	InputRequests map[string]InputRequest
	// Result is the tool's result (TaskCompleted), Err the JSON-RPC error
	// the call would have given (TaskFailed).
	Result *ToolResult
	Err    error
}

// taskMethod reports the methods of the tasks extension and of the
// experimental tasks before it; the Conn answers them all itself.
func taskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list":
		return true
	}
	return false
}

// taskRequest serves a tasks/* request: on its own goroutine when it
// reaches the TaskHandler, at once when it is refused.
func (c *Conn) taskRequest(m *jsonrpcframe.Message, params []jsonrpcframe.Member, meta reqMeta) {
	th, ok := c.cfg.Handler.(TaskHandler)
	switch {
	case !ok || !meta.modern:
		c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrMethodNotFound, map[string]any{"method": m.Method},
			"method not found: %s (tasks are served to MCP %s requests that declare the %s extension)", m.Method, ModernVersions[0], TasksExtension), meta.modern)
		return
	case m.Method == "tasks/result" || m.Method == "tasks/list":
		c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrMethodNotFound, map[string]any{"method": m.Method},
			"method not found: %s is not part of the tasks extension (%s): tasks/get carries a finished task's result", m.Method, TasksExtension), true)
		return
	case !meta.tasks:
		c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrMissingClientCapability,
			map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}},
			"Missing required client capability: %s needs the %s extension in the request's clientCapabilities", m.Method, TasksExtension), true)
		return
	}
	id, ok := jsonrpcframe.String(jsonrpcframe.Lookup(params, "taskId"))
	if !ok || id == "" {
		c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "taskId"}, "%s needs params.taskId (a string)", m.Method), true)
		return
	}
	var responses json.RawMessage
	if m.Method == "tasks/update" {
		responses = jsonrpcframe.Lookup(params, "inputResponses")
		if len(responses) == 0 || responses[0] != '{' {
			c.replyErrorFor(m.ID, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "inputResponses"}, "tasks/update needs params.inputResponses (an object)"), true)
			return
		}
	}
	ctx, e, err := c.track(m.ID)
	if err != nil {
		c.replyErrorFor(m.ID, err, true)
		return
	}
	go func() {
		defer c.untrack(m.ID, e)
		var t *Task
		var err error
		switch m.Method {
		case "tasks/get":
			t, err = th.GetTask(ctx, id)
		case "tasks/update":
			err = th.UpdateTask(ctx, id, responses)
		case "tasks/cancel":
			err = th.CancelTask(ctx, id)
		}
		c.forget(m.ID, e)
		switch {
		case ctx.Err() != nil:
			c.log.Info("request cancelled by the client; no response sent", "id", m.ID.String(), "method", m.Method)
		case err != nil:
			c.replyErrorFor(m.ID, err, true)
		case t != nil:
			c.out.reply(m.ID, c.taskJSON(t, "complete"))
		default:
			c.out.reply(m.ID, c.modernResult(json.RawMessage(`{}`)))
		}
	}()
}

// taskJSON renders t as a modern result: a CreateTaskResult (resultType
// "task") or a tasks/get answer ("complete"), the status's own member
// included.
func (c *Conn) taskJSON(t *Task, resultType string) json.RawMessage {
	v := map[string]any{
		"taskId":        t.ID,
		"status":        t.Status,
		"createdAt":     t.CreatedAt.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": t.LastUpdatedAt.UTC().Format(time.RFC3339Nano),
		"ttlMs":         nil,
	}
	if t.TTL > 0 {
		v["ttlMs"] = t.TTL.Milliseconds()
	}
	if t.PollInterval > 0 {
		v["pollIntervalMs"] = t.PollInterval.Milliseconds()
	}
	if t.StatusMessage != "" {
		v["statusMessage"] = t.StatusMessage
	}
	switch t.Status {
	case TaskInputRequired:
		v["inputRequests"] = t.InputRequests
	case TaskCompleted:
		if t.Result != nil {
			v["result"] = t.Result.JSON()
		} else {
			v["result"] = map[string]any{}
		}
	case TaskFailed:
		err := t.Err
		if err == nil {
			err = proxyerr.New(proxyerr.ErrInternal, nil, "the task failed")
		}
		v["error"] = modernWire(err)
	}
	b := appendEncoded(nil, v)
	b = bytes.TrimSuffix(b, []byte("}"))
	b = append(b, c.modernTail(resultType)...)
	return append(b, '}')
}

// modernWire is the error object a modern request gets for err: no -32002
// (SESSION_NOT_FOUND goes as INVALID_PARAMS, its error_code kept in data).
func modernWire(err error) *jsonrpcframe.Error {
	w := proxyerr.ToWire(err)
	if w.Code == proxyerr.CodeSessionNotFound {
		w.Code = jsonrpcframe.CodeInvalidParams
	}
	return w
}
