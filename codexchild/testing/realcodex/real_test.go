package realcodex_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
	"github.com/google/go-cmp/cmp"
)

// These tests drive the real, pinned Codex CLIs against mockmodel. Each turn
// takes well under a second; every wait is bounded by stepTimeout.

const stepTimeout = 45 * time.Second

func startMock(t *testing.T) *mockmodel.Server {
	t.Helper()
	mock, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	return mock
}

func stepCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), stepTimeout)
	t.Cleanup(cancel)
	return ctx
}

// checkVersion fails the test when the binary is not the pinned version.
func checkVersion(t *testing.T, which realcodex.Which) {
	t.Helper()
	want := which.Pinned()
	got, err := realcodex.Version(stepCtx(t), realcodex.Bin(t, which))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("%s is codex %s, want the pinned %s", which.EnvVar(), got, want)
	}
}

// checkRollout checks the thread's rollout file starts with its session_meta.
func checkRollout(t *testing.T, h *realcodex.Home, threadID string) {
	t.Helper()
	path, err := h.RolloutFor(threadID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		Type    string
		Payload struct{ ID, Cwd string }
	}
	if err := json.Unmarshal(line, &first); err != nil {
		t.Fatal(err)
	}
	if first.Type != "session_meta" || first.Payload.ID != threadID || first.Payload.Cwd != h.WorkDir {
		t.Errorf("rollout %s starts with %s", path, line)
	}
}

// checkNoProcesses waits for every process of the home to be gone.
func checkNoProcesses(t *testing.T, h *realcodex.Home) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		procs := h.Processes()
		if len(procs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after stopping codex:\n%s", strings.Join(procs, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitInFlight waits until the mock has n streams open.
func waitInFlight(t *testing.T, mock *mockmodel.Server, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for mock.InFlight() != n {
		if time.Now().After(deadline) {
			t.Fatalf("mock has %d streams open after %s, want %d", mock.InFlight(), within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkRequestsOf checks the mock's requests for the thread carry its id and
// the mock API key.
func checkRequestsOf(t *testing.T, mock *mockmodel.Server, tid string) {
	t.Helper()
	n := 0
	for _, r := range mock.Requests() {
		if r.ThreadID() != tid {
			continue
		}
		n++
		if got := r.Header.Get("Authorization"); got != "Bearer sk-mock" {
			t.Errorf("request %d: Authorization %q", r.N, got)
		}
	}
	if n == 0 {
		t.Errorf("no model request carried thread-id %s", tid)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the turn should have written %s: %v", path, err)
	}
	return string(b)
}

// ---- codex mcp-server (0.153.4) ----

func mcpSession(t *testing.T, h *realcodex.Home) *conn {
	t.Helper()
	c := dial(t, h, realcodex.MCPServer)
	r := c.mustResult(stepCtx(t), "initialize", msg{"protocolVersion": "2025-06-18",
		"capabilities": msg{"elicitation": msg{}}, "clientInfo": msg{"name": "realcodex-test", "version": "0.0.1"}})
	if getStr(r, "result", "serverInfo", "name") != "codex-mcp-server" {
		t.Fatalf("initialize result: %v", r)
	}
	c.notify("notifications/initialized", nil)
	return c
}

// mcpTurn runs one `codex` tool call and returns its text and thread id,
// answering every elicitation/create with the portable approval and
// returning their params.
func mcpTurn(t *testing.T, c *conn, args msg) (text, threadID string, elicitations []msg) {
	t.Helper()
	r := c.call(stepCtx(t), "tools/call", msg{"name": "codex", "arguments": args}, func(m msg) {
		if m.method() != "elicitation/create" {
			t.Fatalf("unexpected server request %v", m)
		}
		p, _ := m["params"].(map[string]any)
		elicitations = append(elicitations, p)
		c.respond(m["id"], msg{"action": "accept", "content": msg{}, "decision": "approved"})
	})
	if r["error"] != nil || get(r, "result", "isError") == true {
		t.Fatalf("codex tool call failed: %v", r)
	}
	if parts, _ := get(r, "result", "content").([]any); len(parts) == 1 {
		text = getStr(parts[0], "text")
	}
	threadID = getStr(r, "result", "structuredContent", "threadId")
	if threadID == "" || getStr(r, "result", "structuredContent", "content") != text {
		t.Errorf("result lacks threadId or structuredContent: %v", r)
	}
	return text, threadID, elicitations
}

func TestRealMCPServer(t *testing.T) {
	t.Parallel()
	realcodex.Bin(t, realcodex.MCPServer)
	checkVersion(t, realcodex.MCPServer)
	mock := startMock(t)
	h := realcodex.NewHome(t, mock.URL(), nil)

	t.Run("reply", func(t *testing.T) {
		c := mcpSession(t, h)
		text, tid, el := mcpTurn(t, c, msg{"prompt": "hello from realcodex", "cwd": h.WorkDir,
			"developer-instructions": "DEV-MARKER-mcp-7f3a"})
		if text != "MOCK_REPLY: hello from realcodex" || len(el) != 0 {
			t.Errorf("text %q, elicitations %v", text, el)
		}
		if !mock.SawInput("DEV-MARKER-mcp-7f3a") {
			t.Error("the model never saw the developer instructions")
		}
		checkRequestsOf(t, mock, tid)
		checkRollout(t, h, tid)
	})

	t.Run("exec approval", func(t *testing.T) {
		c := mcpSession(t, h)
		text, tid, el := mcpTurn(t, c, msg{"prompt": "RUN_SHELL ESCALATE\nCMD=touch approved-mcp.txt", "cwd": h.WorkDir,
			"approval-policy": "on-request", "sandbox": "workspace-write"})
		if len(el) != 1 {
			t.Fatalf("got %d elicitations, want 1: %v", len(el), el)
		}
		got := []any{el[0]["codex_elicitation"], el[0]["threadId"], el[0]["codex_cwd"], lastStr(el[0]["codex_command"])}
		want := []any{"exec-approval", tid, h.WorkDir, "touch approved-mcp.txt"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("elicitation (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(text, "MOCK_DONE: tool output was: ") || !strings.Contains(text, "exited with code 0") {
			t.Errorf("text %q", text)
		}
		readFile(t, filepath.Join(h.WorkDir, "approved-mcp.txt"))
	})

	t.Run("patch approval", func(t *testing.T) {
		c := mcpSession(t, h)
		path := h.OutsidePath("patched-mcp.txt")
		text, _, el := mcpTurn(t, c, msg{"prompt": "PATCH=" + path, "cwd": h.WorkDir,
			"approval-policy": "on-request", "sandbox": "workspace-write"})
		if len(el) != 1 {
			t.Fatalf("got %d elicitations, want 1: %v", len(el), el)
		}
		got := []any{el[0]["codex_elicitation"], el[0]["codex_changes"]}
		want := []any{"patch-approval", map[string]any{path: map[string]any{"type": "add", "content": mockmodel.PatchContent}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("elicitation (-want +got):\n%s", diff)
		}
		if !strings.Contains(text, "Success. Updated the following files:\nA "+path) {
			t.Errorf("text %q", text)
		}
		if got := readFile(t, path); got != mockmodel.PatchContent {
			t.Errorf("patched file holds %q", got)
		}
	})

	t.Run("patch inside the workspace needs no approval", func(t *testing.T) {
		c := mcpSession(t, h)
		path := filepath.Join(h.WorkDir, "inside-mcp.txt")
		text, _, el := mcpTurn(t, c, msg{"prompt": "PATCH=" + path, "cwd": h.WorkDir,
			"approval-policy": "on-request", "sandbox": "workspace-write"})
		if len(el) != 0 || !strings.Contains(text, "Success.") {
			t.Errorf("text %q, elicitations %v", text, el)
		}
		if got := readFile(t, path); got != mockmodel.PatchContent {
			t.Errorf("patched file holds %q", got)
		}
	})

	t.Run("cancel during SLOW, then exit closes the model stream", func(t *testing.T) {
		c := mcpSession(t, h)
		// After a cancel the mcp-server ignores stdin EOF (README: stale
		// listener), so do not wait the default 5s before SIGTERM.
		c.p.StopGrace = time.Second
		ctx := stepCtx(t)
		id := c.request("tools/call", msg{"name": "codex", "arguments": msg{"prompt": "SLOW=30 take your time", "cwd": h.WorkDir}})
		waitInFlight(t, mock, 1, 20*time.Second)
		c.notify("notifications/cancelled", msg{"requestId": id, "reason": "test cancels"})
		c.until(ctx, "turn_aborted", func(m msg) bool {
			if m.isResponse() && sameID(m["id"], id) {
				t.Fatalf("codex answered the cancelled request: %v", m)
			}
			return m.method() == "codex/event" && getStr(m, "params", "msg", "type") == "turn_aborted"
		}, nil)
		// 0.153.4 keeps reading the aborted turn's model stream to its end
		// (measured: until the SLOW wait is over), so the stream closes only
		// when the process goes.
		if err := c.p.Stop(); err == nil {
			t.Log("codex exited on stdin EOF after a cancel; the stale-listener note may be outdated")
		}
		waitInFlight(t, mock, 0, 3*time.Second)
	})

	t.Run("call tool of a per-thread MCP server", func(t *testing.T) {
		c := mcpSession(t, h)
		text, tid, el := mcpTurn(t, c, msg{"prompt": `CALL_TOOL=mcp__atm.echo_identity ARGS={"text":"hi from the model"}`,
			"cwd": h.WorkDir, "config": msg{"mcp_servers": msg{"atm": h.ToolServer("alice-mcp")}}})
		if len(el) != 0 {
			t.Errorf("elicitations %v", el)
		}
		checkToolCall(t, mock, h, "alice-mcp", tid, text)
		if err := c.p.Stop(); err != nil {
			t.Errorf("stop codex: %v", err)
		}
		checkNoProcesses(t, h)
	})
}

// checkToolCall checks one echo_identity call went through the tool server
// and back to the model.
func checkToolCall(t *testing.T, mock *mockmodel.Server, h *realcodex.Home, identity, tid, text string) {
	t.Helper()
	want := "identity=" + identity + " thread=" + tid + " text=hi from the model"
	if !strings.HasPrefix(text, "MOCK_DONE: tool output was: ") || !strings.HasSuffix(text, want) {
		t.Errorf("text %q, want MOCK_DONE ending in %q", text, want)
	}
	offered := false
	for _, r := range mock.Requests() {
		if r.LastItemType == "message" && strings.HasPrefix(r.LastUserText, "CALL_TOOL=") &&
			r.HasTool("mcp__atm."+realcodex.EchoToolName) {
			offered = true
		}
	}
	if !offered {
		t.Error("the model was never offered mcp__atm.echo_identity")
	}
	calls, err := h.ToolCalls(identity)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Name != realcodex.EchoToolName || calls[0].Meta["threadId"] != tid {
		t.Errorf("tool server calls: %+v", calls)
	}
}

func lastStr(v any) any {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return nil
	}
	return arr[len(arr)-1]
}

// ---- codex app-server (the pinned version) ----

func appSession(t *testing.T, h *realcodex.Home) *conn {
	t.Helper()
	c := dial(t, h, realcodex.AppServer)
	r := c.mustResult(stepCtx(t), "initialize", msg{"clientInfo": msg{"name": "realcodex-test", "title": "realcodex test", "version": "0.0.1"}})
	if getStr(r, "result", "codexHome") != h.Dir {
		t.Fatalf("initialize result: %v", r)
	}
	c.notify("initialized", nil)
	return c
}

func appThread(t *testing.T, c *conn, h *realcodex.Home, extra msg) string {
	t.Helper()
	params := msg{"cwd": h.WorkDir, "approvalPolicy": "on-request", "sandbox": "workspace-write"}
	for k, v := range extra {
		params[k] = v
	}
	r := c.mustResult(stepCtx(t), "thread/start", params)
	tid := getStr(r, "result", "thread", "id")
	if tid == "" {
		t.Fatalf("thread/start result: %v", r)
	}
	return tid
}

// appTurn runs one turn and returns the text of the last agentMessage of
// turn/completed, answering every approval request with accept and
// returning the requests.
func appTurn(t *testing.T, c *conn, tid, text string) (reply string, approvals []msg) {
	t.Helper()
	ctx := stepCtx(t)
	onRequest := func(m msg) {
		switch m.method() {
		case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
			approvals = append(approvals, m)
			c.respond(m["id"], msg{"decision": "accept"})
		default:
			t.Fatalf("unexpected server request %v", m)
		}
	}
	r := c.call(ctx, "turn/start", msg{"threadId": tid, "input": []any{msg{"type": "text", "text": text}}}, onRequest)
	if r["error"] != nil || getStr(r, "result", "turn", "id") == "" {
		t.Fatalf("turn/start: %v", r)
	}
	done := c.until(ctx, "turn/completed", func(m msg) bool {
		return m.method() == "turn/completed" && getStr(m, "params", "threadId") == tid
	}, onRequest)
	if s := getStr(done, "params", "turn", "status"); s != "completed" {
		t.Fatalf("turn ended %s: %v", s, done)
	}
	items, _ := get(done, "params", "turn", "items").([]any)
	for i := len(items) - 1; i >= 0; i-- {
		if getStr(items[i], "type") == "agentMessage" {
			return getStr(items[i], "text"), approvals
		}
	}
	t.Fatalf("turn/completed without an agentMessage: %v", done)
	return "", nil
}

func TestRealAppServer(t *testing.T) {
	t.Parallel()
	realcodex.Bin(t, realcodex.AppServer)
	checkVersion(t, realcodex.AppServer)
	mock := startMock(t)
	h := realcodex.NewHome(t, mock.URL(), nil)

	t.Run("reply", func(t *testing.T) {
		c := appSession(t, h)
		tid := appThread(t, c, h, msg{"developerInstructions": "DEV-MARKER-app-9c1e"})
		text, ap := appTurn(t, c, tid, "hello from realcodex")
		if text != "MOCK_REPLY: hello from realcodex" || len(ap) != 0 {
			t.Errorf("text %q, approvals %v", text, ap)
		}
		text, _ = appTurn(t, c, tid, "second turn")
		if text != "MOCK_REPLY: second turn" {
			t.Errorf("second turn text %q", text)
		}
		if !mock.SawInput("DEV-MARKER-app-9c1e") {
			t.Error("the model never saw the developer instructions")
		}
		checkRequestsOf(t, mock, tid)
		checkRollout(t, h, tid)
	})

	t.Run("exec approval", func(t *testing.T) {
		c := appSession(t, h)
		tid := appThread(t, c, h, nil)
		text, ap := appTurn(t, c, tid, "RUN_SHELL ESCALATE\nCMD=touch approved-app.txt")
		if len(ap) != 1 {
			t.Fatalf("got %d approval requests, want 1: %v", len(ap), ap)
		}
		got := []string{ap[0].method(), getStr(ap[0], "params", "threadId"), getStr(ap[0], "params", "cwd"),
			getStr(ap[0], "params", "reason")}
		want := []string{"item/commandExecution/requestApproval", tid, h.WorkDir, "mock wants to run outside the sandbox"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("approval request (-want +got):\n%s", diff)
		}
		if !strings.Contains(getStr(ap[0], "params", "command"), "touch approved-app.txt") {
			t.Errorf("approval command: %v", ap[0])
		}
		if !strings.HasPrefix(text, "MOCK_DONE: tool output was: ") || !strings.Contains(text, "exited with code 0") {
			t.Errorf("text %q", text)
		}
		readFile(t, filepath.Join(h.WorkDir, "approved-app.txt"))
	})

	t.Run("patch approval", func(t *testing.T) {
		c := appSession(t, h)
		tid := appThread(t, c, h, nil)
		path := h.OutsidePath("patched-app.txt")
		text, ap := appTurn(t, c, tid, "PATCH="+path)
		if len(ap) != 1 || ap[0].method() != "item/fileChange/requestApproval" || getStr(ap[0], "params", "threadId") != tid {
			t.Fatalf("approval requests: %v", ap)
		}
		if !strings.Contains(text, "Success. Updated the following files:\nA "+path) {
			t.Errorf("text %q", text)
		}
		if got := readFile(t, path); got != mockmodel.PatchContent {
			t.Errorf("patched file holds %q", got)
		}
	})

	t.Run("patch inside the workspace needs no approval", func(t *testing.T) {
		c := appSession(t, h)
		tid := appThread(t, c, h, nil)
		path := filepath.Join(h.WorkDir, "inside-app.txt")
		text, ap := appTurn(t, c, tid, "PATCH="+path)
		if len(ap) != 0 || !strings.Contains(text, "Success.") {
			t.Errorf("text %q, approvals %v", text, ap)
		}
		if got := readFile(t, path); got != mockmodel.PatchContent {
			t.Errorf("patched file holds %q", got)
		}
	})

	t.Run("interrupt during SLOW closes the model stream", func(t *testing.T) {
		c := appSession(t, h)
		tid := appThread(t, c, h, nil)
		ctx := stepCtx(t)
		r := c.mustResult(ctx, "turn/start", msg{"threadId": tid, "input": []any{msg{"type": "text", "text": "SLOW=30 take your time"}}})
		turnID := getStr(r, "result", "turn", "id")
		waitInFlight(t, mock, 1, 20*time.Second)
		c.mustResult(ctx, "turn/interrupt", msg{"threadId": tid, "turnId": turnID})
		done := c.until(ctx, "turn/completed", func(m msg) bool {
			return m.method() == "turn/completed" && getStr(m, "params", "threadId") == tid
		}, nil)
		if s := getStr(done, "params", "turn", "status"); s != "interrupted" {
			t.Errorf("turn status %q, want interrupted", s)
		}
		waitInFlight(t, mock, 0, 3*time.Second)
	})

	t.Run("call tool of a per-thread MCP server", func(t *testing.T) {
		c := appSession(t, h)
		tid := appThread(t, c, h, msg{"config": msg{"mcp_servers": msg{"atm": h.ToolServer("bob-app")}}})
		text, ap := appTurn(t, c, tid, `CALL_TOOL=mcp__atm.echo_identity ARGS={"text":"hi from the model"}`)
		if len(ap) != 0 {
			t.Errorf("approvals %v", ap)
		}
		checkToolCall(t, mock, h, "bob-app", tid, text)
		if err := c.p.Stop(); err != nil {
			t.Errorf("stop codex: %v", err)
		}
		checkNoProcesses(t, h)
	})
}
