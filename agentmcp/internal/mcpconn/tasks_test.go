package mcpconn

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
)

// taskHandler is a Handler that is a TaskHandler: the call "long" makes a
// task (when the request declared the extension), tasks/get answers from
// a table, and tasks/update and tasks/cancel are recorded.
type taskHandler struct {
	tasks map[string]*Task

	mu      sync.Mutex
	calls   []*ToolCall
	updates []string
	cancels []string
}

var t0 = time.Date(2026, 7, 28, 10, 30, 0, 0, time.UTC)

func (h *taskHandler) CallTool(_ context.Context, c *ToolCall) (*ToolResult, error) {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	if c.Name == "long" {
		return &ToolResult{Task: &Task{ID: "t-1", Status: TaskWorking, StatusMessage: "started", CreatedAt: t0, LastUpdatedAt: t0,
			PollInterval: time.Second}}, nil
	}
	return &ToolResult{Text: "called " + c.Name}, nil
}

func (h *taskHandler) GetTask(_ context.Context, id string) (*Task, error) {
	if t := h.tasks[id]; t != nil {
		return t, nil
	}
	return nil, proxyerr.New(proxyerr.ErrTaskNotFound, nil, "Failed to retrieve task: Task not found")
}

func (h *taskHandler) UpdateTask(_ context.Context, id string, responses json.RawMessage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.updates = append(h.updates, id+" "+string(responses))
	return nil
}

func (h *taskHandler) CancelTask(_ context.Context, id string) error {
	if h.tasks[id] == nil {
		return proxyerr.New(proxyerr.ErrTaskNotFound, nil, "Failed to retrieve task: Task not found")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cancels = append(h.cancels, id)
	return nil
}

// TestTasks: a Conn whose Handler is a TaskHandler lists the tasks
// extension, answers a call whose request declared it with the task the
// handler made (resultType "task"), serves tasks/get (each status with its
// own member, the error of a failed task in the modern revision's codes),
// tasks/update and tasks/cancel, and refuses them to a request without
// the extension (-32021), to a legacy request and for the methods the
// extension does not have (-32601).
func TestTasks(t *testing.T) {
	t1 := t0.Add(90 * time.Second)
	h := &taskHandler{tasks: map[string]*Task{
		"working": {ID: "working", Status: TaskWorking, StatusMessage: "[arch] running `make`", CreatedAt: t0, LastUpdatedAt: t1, PollInterval: time.Second},
		"asking": {ID: "asking", Status: TaskInputRequired, CreatedAt: t0, LastUpdatedAt: t1,
			InputRequests: map[string]InputRequest{"approval-1": {Method: "elicitation/create", Params: map[string]any{"mode": "form"}}}},
		"done": {ID: "done", Status: TaskCompleted, CreatedAt: t0, LastUpdatedAt: t1, TTL: time.Hour,
			Result: &ToolResult{Text: "hi", IsError: true, Structured: map[string]any{"status": "failed"}}},
		"failed": {ID: "failed", Status: TaskFailed, CreatedAt: t0, LastUpdatedAt: t1,
			Err: proxyerr.New(proxyerr.ErrSessionNotFound, nil, "no session with agent_id %q", "x")},
		"stopped": {ID: "stopped", Status: TaskCancelled, StatusMessage: "interrupted", CreatedAt: t0, LastUpdatedAt: t1},
	}}
	c := start(t, Config{Handler: h, ServerInfo: ServerInfo{Name: "srv", Version: "1.0"}}, false)
	withTasks := modernMeta("2026-07-28", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	without := modernMeta("2026-07-28", `{"extensions":{"other":{}}}`)
	const info = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}`
	const stamps = `"createdAt":"2026-07-28T10:30:00Z","lastUpdatedAt":"2026-07-28T10:31:30Z"`
	tests := []struct {
		name, method, params string
		want                 string // the result, or the error code and message
	}{
		{"discover lists the extension", "server/discover", `{` + withTasks + `}`,
			`{"cacheScope":"public","capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}},"logging":{},"tools":{"listChanged":false}},"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"ttlMs":0,"resultType":"complete",` + info + `}`},
		{"a call answered with a task", "tools/call", `{"name":"long","arguments":{},` + withTasks + `}`,
			`{"createdAt":"2026-07-28T10:30:00Z","lastUpdatedAt":"2026-07-28T10:30:00Z","pollIntervalMs":1000,"status":"working","statusMessage":"started","taskId":"t-1","ttlMs":null,"resultType":"task",` + info + `}`},
		{"no task for a client without the extension", "tools/call", `{"name":"long","arguments":{},` + without + `}`,
			`-32603 tool long made a task for a client that did not declare the tasks extension`},
		{"working", "tasks/get", `{"taskId":"working",` + withTasks + `}`,
			`{` + stamps + `,"pollIntervalMs":1000,"status":"working","statusMessage":"[arch] running ` + "`make`" + `","taskId":"working","ttlMs":null,"resultType":"complete",` + info + `}`},
		{"input required", "tasks/get", `{"taskId":"asking",` + withTasks + `}`,
			`{"createdAt":"2026-07-28T10:30:00Z","inputRequests":{"approval-1":{"method":"elicitation/create","params":{"mode":"form"}}},"lastUpdatedAt":"2026-07-28T10:31:30Z","status":"input_required","taskId":"asking","ttlMs":null,"resultType":"complete",` + info + `}`},
		{"completed: the call's result", "tasks/get", `{"taskId":"done",` + withTasks + `}`,
			`{` + stamps + `,"result":{"content":[{"text":"hi","type":"text"}],"isError":true,"structuredContent":{"status":"failed"}},"status":"completed","taskId":"done","ttlMs":3600000,"resultType":"complete",` + info + `}`},
		{"failed: the call's error, no -32002", "tasks/get", `{"taskId":"failed",` + withTasks + `}`,
			`{"createdAt":"2026-07-28T10:30:00Z","error":{"code":-32602,"message":"no session with agent_id \"x\"","data":{"error_code":"SESSION_NOT_FOUND","error_source":"proxy"}},"lastUpdatedAt":"2026-07-28T10:31:30Z","status":"failed","taskId":"failed","ttlMs":null,"resultType":"complete",` + info + `}`},
		{"cancelled", "tasks/get", `{"taskId":"stopped",` + withTasks + `}`,
			`{` + stamps + `,"status":"cancelled","statusMessage":"interrupted","taskId":"stopped","ttlMs":null,"resultType":"complete",` + info + `}`},
		{"unknown task", "tasks/get", `{"taskId":"nope",` + withTasks + `}`, `-32602 Failed to retrieve task: Task not found`},
		{"no taskId", "tasks/get", `{` + withTasks + `}`, `-32602 tasks/get needs params.taskId (a string)`},
		{"update", "tasks/update", `{"taskId":"asking","inputResponses":{"approval-1":{"action":"accept"}},` + withTasks + `}`,
			`{"resultType":"complete",` + info + `}`},
		{"update without responses", "tasks/update", `{"taskId":"asking",` + withTasks + `}`,
			`-32602 tasks/update needs params.inputResponses (an object)`},
		{"cancel", "tasks/cancel", `{"taskId":"working",` + withTasks + `}`, `{"resultType":"complete",` + info + `}`},
		{"cancel an unknown task", "tasks/cancel", `{"taskId":"nope",` + withTasks + `}`, `-32602 Failed to retrieve task: Task not found`},
		{"a client without the extension", "tasks/get", `{"taskId":"working",` + without + `}`,
			`-32021 Missing required client capability: tasks/get needs the io.modelcontextprotocol/tasks extension in the request's clientCapabilities`},
		{"no tasks/list in the extension", "tasks/list", `{` + withTasks + `}`,
			`-32601 method not found: tasks/list is not part of the tasks extension (io.modelcontextprotocol/tasks): tasks/get carries a finished task's result`},
		{"no tasks/result in the extension", "tasks/result", `{"taskId":"done",` + withTasks + `}`,
			`-32601 method not found: tasks/result is not part of the tasks extension (io.modelcontextprotocol/tasks): tasks/get carries a finished task's result`},
		{"a legacy request", "tasks/get", `{"taskId":"working"}`,
			`-32601 method not found: tasks/get (tasks are served to MCP 2026-07-28 requests that declare the io.modelcontextprotocol/tasks extension)`},
	}
	for _, tt := range tests {
		if got := c.answer(tt.method, tt.params); got != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.name, got, tt.want)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) != 2 || !h.calls[0].Tasks || h.calls[1].Tasks {
		t.Errorf("the calls' Tasks: want true then false, got %d calls", len(h.calls))
	}
	if want := `asking {"approval-1":{"action":"accept"}}`; len(h.updates) != 1 || h.updates[0] != want {
		t.Errorf("updates %q, want [%q]", h.updates, want)
	}
	if len(h.cancels) != 1 || h.cancels[0] != "working" {
		t.Errorf("cancels %q, want [working]", h.cancels)
	}
}

// TestTasksWithoutTaskHandler: without a TaskHandler the extension is not
// listed and its methods do not exist.
func TestTasksWithoutTaskHandler(t *testing.T) {
	c := start(t, Config{Handler: echo}, false)
	m := modernMeta("2026-07-28", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	if got := c.answer("server/discover", `{`+m+`}`); strings.Contains(got, "extensions") {
		t.Errorf("server/discover lists an extension: %s", got)
	}
	want := `-32601 method not found: tasks/get (tasks are served to MCP 2026-07-28 requests that declare the io.modelcontextprotocol/tasks extension)`
	if got := c.answer("tasks/get", `{"taskId":"x",`+m+`}`); got != want {
		t.Errorf("tasks/get:\n got  %s\n want %s", got, want)
	}
}
