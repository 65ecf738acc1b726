package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/google/go-cmp/cmp"
)

func TestInitializeAndToolList(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	// tools/list works before initialize and before any child exists.
	m := c.call("tools/list", nil)
	var list struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if len(tool.InputSchema) == 0 || len(tool.OutputSchema) == 0 {
			t.Errorf("tool %s lacks an input or output schema", tool.Name)
		}
	}
	want := []string{"codex", "codex-reply", "agent_start", "agent_reply", "atm_send", "atm_read", "atm_broadcast", "atm_pending_count", "agent_sessions",
		"agent_status", "agent_close", "agent_wait", "agent_interrupt", "agent_respond", "agent_list_codex_sessions", "agent_restart_codex",
		"agent_diff", "agent_merge", "agent_fork"}
	sort.Strings(want)
	sort.Strings(names)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if len(c.fb.Requests()) != 0 {
		t.Error("tools/list reached the child")
	}
	tests := []struct{ asked, want string }{{"2025-06-18", "2025-06-18"}, {"2024-11-05", "2024-11-05"}, {"1999-01-01", mcpconn.ProtocolVersions[0]}}
	for _, tt := range tests {
		m := c.call("initialize", map[string]any{"protocolVersion": tt.asked, "capabilities": map[string]any{}})
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Result, &r)
		if r.ProtocolVersion != tt.want {
			t.Errorf("initialize(%s) = %s, want %s", tt.asked, r.ProtocolVersion, tt.want)
		}
	}
	for _, method := range []string{"ping", "resources/list", "prompts/list"} {
		if m := c.call(method, nil); m.Error != nil {
			t.Errorf("%s: %s", method, m.Error)
		}
	}
}

func TestBadInputKeepsConnection(t *testing.T) {
	c := startProxy(t, harnessOpts{kind: codexchild.KindAppServer})
	c.initialize(false)
	// A line that is not JSON gets -32700 with a null id; the connection lives on.
	if _, err := c.in.Write([]byte("this is not json\n")); err != nil {
		t.Fatal(err)
	}
	if m := c.call("ping", nil); m.Error != nil {
		t.Fatalf("ping after garbage: %s", m.Error)
	}
	c.mu.Lock()
	if len(c.nullReplies) != 1 || !strings.Contains(string(c.nullReplies[0].Error), "-32700") {
		t.Errorf("replies with a null id = %v, want one -32700", c.nullReplies)
	}
	c.mu.Unlock()
	tests := []struct {
		name string
		tool string
		args map[string]any
		code int64
	}{
		{"unknown tool", "nope", map[string]any{}, -32602},
		{"wrong type names the argument", "codex", map[string]any{"prompt": 5}, -32602},
		{"unknown argument", "codex", map[string]any{"prompt": "x", "bogus": 1}, -32602},
		{"prompt and agent_file", "codex", map[string]any{"prompt": "x", "agent_file": "a.md"}, proxyerr.CodeInvalidSessionParams},
		{"missing agent file", "codex", map[string]any{"agent_file": "missing.md"}, proxyerr.CodeAgentFileNotFound},
		{"path-like identity", "codex", map[string]any{"prompt": "x", "identity": "../evil"}, -32602},
		{"unknown role", "codex", map[string]any{"prompt": "x", "role": "wizard"}, proxyerr.CodeInvalidSessionParams},
		{"unknown session", "codex-reply", map[string]any{"prompt": "x", "agent_id": "codex-nope"}, proxyerr.CodeSessionNotFound},
		{"atm without identity", "atm_send", map[string]any{"to": "arch", "message": "hi"}, proxyerr.CodeIdentityRequired},
		{"atm as someone else", "atm_send", map[string]any{"to": "arch", "message": "hi", "identity": "team-lead"}, proxyerr.CodeIdentityConflict},
		{"close nothing", "agent_close", map[string]any{}, -32602},
		{"other method on app-server", "", nil, -32601},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m *jsonrpcframe.Message
			if tt.tool == "" {
				m = c.call("thread/list", map[string]any{})
			} else {
				m = c.tool(tt.tool, tt.args)
			}
			code, data := c.rpcErr(m)
			if code != tt.code {
				t.Errorf("code = %d, want %d (%s)", code, tt.code, m.Error)
			}
			if data["error_source"] != "proxy" {
				t.Errorf("error_source = %v, want proxy", data["error_source"])
			}
		})
	}
	if n := len(c.fb.Requests()); n != 0 {
		t.Errorf("%d bad requests reached the child", n)
	}
}

func TestCodexSessionLifecycle(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	c.initialize(false)
	res := c.structured(c.tool("codex", map[string]any{"prompt": "hello", "identity": "arch", "developer-instructions": "Be brief."}))
	agentID, _ := res["agent_id"].(string)
	if !strings.HasPrefix(agentID, "codex-") || res["identity"] != "arch" || res["content"] != "echo: hello" || res["threadId"] == "" {
		t.Fatalf("codex result = %v", res)
	}
	turns := c.fb.Requests()
	first := turns[0]
	dev := first.Params.DeveloperInstructions
	for _, want := range []string{"Be brief.", "Identity:  arch", "Team:      dev", "Agent ID:  " + agentID} {
		if !strings.Contains(dev, want) {
			t.Errorf("developer-instructions lack %q:\n%s", want, dev)
		}
	}
	if !strings.HasPrefix(dev, "Be brief.") {
		t.Errorf("caller's developer-instructions were not kept first:\n%s", dev)
	}
	// A second session with the same identity is refused with the holder.
	code, data := c.rpcErr(c.tool("codex", map[string]any{"prompt": "again", "identity": "arch"}))
	if code != proxyerr.CodeIdentityConflict || data["conflicting_agent_id"] != agentID {
		t.Errorf("duplicate identity: code %d data %v", code, data)
	}
	// codex-reply restores the identity and continues the thread.
	res2 := c.structured(c.tool("codex-reply", map[string]any{"prompt": "more", "agent_id": agentID}))
	if res2["threadId"] != res["threadId"] || res2["identity"] != "arch" {
		t.Errorf("reply = %v", res2)
	}
	turns = c.fb.Requests()
	if last := turns[len(turns)-1]; last.ThreadID != res["threadId"] || !strings.Contains(last.Prompt, "<session-context>") {
		t.Errorf("reply turn = %+v", last)
	}
	// The registry file has the session.
	reg, err := os.ReadFile(filepath.Join(c.home, ".config", "atm", "agent-sessions", "dev", "proxy", "registry.json"))
	if err != nil || !strings.Contains(string(reg), agentID) {
		t.Errorf("registry.json does not hold %s: %v\n%s", agentID, err, reg)
	}
	// Close, idempotently, then the identity can be reused.
	closed := c.structured(c.tool("agent_close", map[string]any{"agent_id": agentID}))
	if closed["status"] != "closed" {
		t.Errorf("close = %v", closed)
	}
	again := c.structured(c.tool("agent_close", map[string]any{"agent_id": agentID}))
	if again["status"] != "closed" || again["already_closed"] != true {
		t.Errorf("second close = %v", again)
	}
	if code, _ := c.rpcErr(c.tool("codex-reply", map[string]any{"prompt": "x", "agent_id": agentID})); code != proxyerr.CodeSessionClosed {
		t.Errorf("reply to a closed session: code %d", code)
	}
	fresh := c.structured(c.tool("codex", map[string]any{"prompt": "new", "identity": "arch"}))
	if fresh["agent_id"] == agentID {
		t.Error("a new session reused the old agent_id")
	}
}

func TestReplyWaitsForBusySession(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	c.initialize(false)
	res := c.structured(c.tool("codex", map[string]any{"prompt": "start", "identity": "dev-1"}))
	agentID := res["agent_id"].(string)
	_, slow := c.send("tools/call", map[string]any{"name": "codex-reply", "arguments": map[string]any{"agent_id": agentID, "prompt": "BLOCK"}})
	poll.Until(t, "the slow turn", func() bool { return len(c.fb.Requests()) == 2 })
	_, second := c.send("tools/call", map[string]any{"name": "codex-reply", "arguments": map[string]any{"agent_id": agentID, "prompt": "second"}})
	time.Sleep(50 * time.Millisecond)
	if n := len(c.fb.Requests()); n != 2 {
		t.Fatalf("a reply to a busy session started at once (%d turns)", n)
	}
	status := c.structured(c.tool("agent_status", map[string]any{"agent_id": agentID}))
	if status["thread_state"] != "busy" || status["queued"] != float64(1) {
		t.Errorf("status while busy = %v", status)
	}
	if err := c.fb.Interrupt(context.TODO(), res["threadId"].(string)); err != nil {
		t.Fatal(err)
	}
	c.wait(slow)
	got := c.structured(c.wait(second))
	if got["content"] != "echo: second" {
		t.Errorf("queued reply = %v", got)
	}
	poll.Until(t, "idle", func() bool {
		return c.structured(c.tool("agent_status", map[string]any{"agent_id": agentID}))["thread_state"] == "idle"
	})
}

func TestCloseBusySessionFailsQueued(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	c.initialize(false)
	res := c.structured(c.tool("codex", map[string]any{"prompt": "start", "identity": "dev-1"}))
	agentID := res["agent_id"].(string)
	_, slow := c.send("tools/call", map[string]any{"name": "codex-reply", "arguments": map[string]any{"agent_id": agentID, "prompt": "BLOCK"}})
	poll.Until(t, "the slow turn", func() bool { return len(c.fb.Requests()) == 2 })
	_, queued := c.send("tools/call", map[string]any{"name": "codex-reply", "arguments": map[string]any{"agent_id": agentID, "prompt": "queued"}})
	time.Sleep(50 * time.Millisecond)
	closed := c.structured(c.tool("agent_close", map[string]any{"identity": "dev-1", "summary": true}))
	if closed["agent_id"] != agentID || closed["status"] != "interrupted" || closed["thread_id"] != res["threadId"] {
		t.Errorf("close = %v, want interrupted, with its thread", closed)
	}
	if code, _ := c.rpcErr(c.wait(queued)); code != proxyerr.CodeSessionClosed {
		t.Errorf("queued request: code %d, want SESSION_CLOSED", code)
	}
	c.wait(slow)
	// The summary was asked for (summary: true) on the interrupted thread.
	turns := c.fb.Requests()
	if last := turns[len(turns)-1]; !strings.Contains(last.Prompt, "Session ending.") {
		t.Errorf("last turn = %q, want the summary prompt", last.Prompt)
	}
	if closed["summary_saved"] != true {
		t.Errorf("summary not saved: %v", closed)
	}
}

func TestMaxSessions(t *testing.T) {
	c := startProxy(t, harnessOpts{modify: func(o *Options) { o.MaxSessions = 2 }})
	c.initialize(false)
	for _, id := range []string{"arch", "dev-1"} {
		c.structured(c.tool("codex", map[string]any{"prompt": "x", "identity": id}))
	}
	code, _ := c.rpcErr(c.tool("codex", map[string]any{"prompt": "x", "identity": "codex"}))
	if code != proxyerr.CodeMaxSessionsExceeded {
		t.Errorf("code %d, want MAX_SESSIONS_EXCEEDED", code)
	}
}

func TestEventsTaggedAndProgress(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	c.initialize(false)
	m := c.call("tools/call", map[string]any{"name": "codex", "arguments": map[string]any{"prompt": "EVENTS=3", "identity": "arch"},
		"_meta": map[string]any{"progressToken": "tok-1"}})
	res := c.structured(m)
	poll.Until(t, "events", func() bool { return len(c.notifications("codex/event")) >= 5 })
	for _, e := range c.notifications("codex/event") {
		var p struct {
			AgentID string `json:"agent_id"`
			Meta    struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"_meta"`
			Msg json.RawMessage `json:"msg"`
		}
		_ = json.Unmarshal(e.Params, &p)
		if p.AgentID != res["agent_id"] || len(p.Msg) == 0 {
			t.Errorf("event not tagged or altered: %s", e.Params)
		}
		if string(p.Meta.RequestID) == "99" {
			t.Errorf("the child's request id leaked: %s", e.Params)
		}
	}
	prog := c.notifications("notifications/progress")
	if len(prog) == 0 {
		t.Fatal("no progress for a request with a progress token")
	}
	for _, p := range prog {
		if !strings.Contains(string(p.Params), `"tok-1"`) {
			t.Errorf("progress for another token: %s", p.Params)
		}
	}
	// Without a token, no progress.
	before := len(c.notifications("notifications/progress"))
	c.structured(c.tool("codex-reply", map[string]any{"prompt": "EVENTS=2", "agent_id": res["agent_id"]}))
	time.Sleep(20 * time.Millisecond)
	if after := len(c.notifications("notifications/progress")); after != before {
		t.Errorf("progress sent without a token (%d → %d)", before, after)
	}
}

func TestApprovalBridging(t *testing.T) {
	tests := []struct {
		name        string
		elicitation bool
		fallback    string
		answer      map[string]any
		want        string
	}{
		{"accept", true, "", map[string]any{"action": "accept", "content": map[string]any{}}, "decision: approve "},
		{"accept for session", true, "", map[string]any{"action": "accept", "content": map[string]any{"approve_for_session": true}}, "decision: approve_for_session "},
		{"decline with reason", true, "", map[string]any{"action": "decline", "content": map[string]any{"reason": "too risky"}}, "decision: deny too risky"},
		{"cancel denies and the turn goes on", true, "", map[string]any{"action": "cancel"}, "decision: deny the approval request was dismissed"},
		{"no elicitation: deny", false, "", nil, "decision: deny denied automatically"},
		{"no elicitation: approve policy", false, "approve", nil, "decision: approve "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startProxy(t, harnessOpts{modify: func(o *Options) { o.ApprovalFallback = tt.fallback }})
			var asked []*jsonrpcframe.Message
			c.onRequest = func(m *jsonrpcframe.Message) any {
				c.mu.Lock()
				asked = append(asked, m)
				c.mu.Unlock()
				return tt.answer
			}
			c.initialize(tt.elicitation)
			res := c.structured(c.tool("codex", map[string]any{"prompt": "APPROVE", "identity": "arch"}))
			if got := res["content"].(string); !strings.HasPrefix(got, tt.want) {
				t.Errorf("content = %q, want prefix %q", got, tt.want)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if tt.elicitation != (len(asked) == 1) {
				t.Fatalf("%d elicitation requests, elicitation capability %v", len(asked), tt.elicitation)
			}
			if tt.elicitation {
				var p map[string]any
				_ = json.Unmarshal(asked[0].Params, &p)
				if asked[0].Method != "elicitation/create" || p["agent_id"] != res["agent_id"] || p["command"] != "touch x" || p["kind"] != "exec" {
					t.Errorf("elicitation = %s %v", asked[0].Method, p)
				}
			}
		})
	}
}

func TestElicitationTimeoutDenies(t *testing.T) {
	c := startProxy(t, harnessOpts{modify: func(o *Options) { o.ElicitationTimeout = 100 * time.Millisecond }})
	block := make(chan struct{})
	defer close(block)
	c.onRequest = func(*jsonrpcframe.Message) any { <-block; return map[string]any{"action": "accept"} }
	c.initialize(true)
	res := c.structured(c.tool("codex", map[string]any{"prompt": "APPROVE", "identity": "arch"}))
	if got := res["content"].(string); !strings.HasPrefix(got, "decision: deny no answer from the user") {
		t.Errorf("content = %q", got)
	}
	audit, _ := os.ReadFile(filepath.Join(c.home, ".config", "atm", "agent-sessions", "dev", "audit.jsonl"))
	if !strings.Contains(string(audit), "elicitation timeout") {
		t.Errorf("audit has no timeout entry:\n%s", audit)
	}
}

func TestConcurrentApprovalsRouted(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	c.onRequest = func(m *jsonrpcframe.Message) any {
		var p map[string]any
		_ = json.Unmarshal(m.Params, &p)
		if p["identity"] == "arch" {
			time.Sleep(30 * time.Millisecond) // answer out of order
			return map[string]any{"action": "accept"}
		}
		return map[string]any{"action": "decline", "content": map[string]any{"reason": "not dev-1"}}
	}
	c.initialize(true)
	_, a := c.send("tools/call", map[string]any{"name": "codex", "arguments": map[string]any{"prompt": "APPROVE", "identity": "arch"}})
	_, b := c.send("tools/call", map[string]any{"name": "codex", "arguments": map[string]any{"prompt": "APPROVE", "identity": "dev-1"}})
	if got := c.structured(c.wait(a))["content"]; got != "decision: approve " {
		t.Errorf("arch: %v", got)
	}
	if got := c.structured(c.wait(b))["content"]; got != "decision: deny not dev-1" {
		t.Errorf("dev-1: %v", got)
	}
}

func TestShutdownWritesSummariesAndResume(t *testing.T) {
	home := t.TempDir()
	c := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer})
	c.initialize(false)
	res := c.structured(c.tool("codex", map[string]any{"prompt": "work", "identity": "arch"}))
	c.close()
	summary := filepath.Join(home, ".config", "atm", "agent-sessions", "dev", "arch", res["threadId"].(string), "summary.md")
	b, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(b), "echo: ") {
		t.Fatalf("summary %s: %v %q", summary, err, b)
	}
	target := "arch"
	c2 := startProxyAt(t, home, harnessOpts{kind: codexchild.KindAppServer, resume: &target})
	c2.initialize(false)
	sessions := c2.structured(c2.tool("agent_sessions", nil))["sessions"].([]any)
	first := sessions[0].(map[string]any)
	if first["agent_id"] != res["agent_id"] || first["status"] != "idle" {
		t.Fatalf("resumed session = %v", first)
	}
	reply := c2.structured(c2.tool("codex-reply", map[string]any{"prompt": "go on", "agent_id": res["agent_id"]}))
	turns := c2.fb.Requests()
	last := turns[len(turns)-1]
	// The thread is resumed; its summary is only what a new thread in its
	// place would be given.
	if last.ThreadID != res["threadId"] || strings.Contains(last.Prompt, "[Previous session") ||
		strings.Contains(last.Params.DeveloperInstructions, "[Previous session") || !strings.Contains(last.Seed, "[Previous session — arch on") {
		t.Errorf("first turn after resume = thread %s prompt %q seed %q", last.ThreadID, last.Prompt, last.Seed)
	}
	if th, _ := reply["thread"].(map[string]any); th["continued"] != true || th["resumed"] != true {
		t.Errorf("first result after resume: thread = %v, want continued and resumed", reply["thread"])
	}
}

// TestShutdownJoinsNotify: a notification passed on to Codex whose write
// waits (the child's stdin full) does not outlive serve: shutdown ends it
// once the child is stopped, before Run returns.
func TestShutdownJoinsNotify(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	entered := make(chan struct{})
	var ended atomic.Bool
	c.fb.OnNotify(func(ctx context.Context, m *jsonrpcframe.Message) error {
		close(entered)
		<-ctx.Done() // the write waits for room until it is given up
		ended.Store(true)
		return ctx.Err()
	})
	c.initialize(false)
	n, _ := jsonrpcframe.NewNotification("notifications/roots/list_changed", nil)
	if err := c.w.Write(n); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the notification was not passed on")
	}
	c.close()
	if !ended.Load() {
		t.Error("Run returned while a notification was still being passed on to the child")
	}
}

func TestChildDeathReported(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	c.initialize(false)
	c.fb.Die()
	code, data := c.rpcErr(c.tool("codex", map[string]any{"prompt": "x", "identity": "arch"}))
	if code != proxyerr.CodeChildProcessDead || data["signal"] != "killed" {
		t.Errorf("code %d data %v", code, data)
	}
}

func TestATMTools(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	c.initialize(false)
	arch := c.structured(c.tool("codex", map[string]any{"prompt": "x", "identity": "arch"}))
	sent := c.structured(c.tool("atm_send", map[string]any{"to": "dev-1", "message": "hello dev", "agent_id": arch["agent_id"]}))
	if sent["from"] != "arch" || sent["to"] != "dev-1" || sent["message_id"] == "" {
		t.Fatalf("send = %v", sent)
	}
	inbox, err := os.ReadFile(filepath.Join(c.home, ".claude", "teams", "dev", "inboxes", "dev-1.json"))
	if err != nil || !strings.Contains(string(inbox), `"from": "arch"`) {
		t.Fatalf("inbox: %v\n%s", err, inbox)
	}
	// The proxy's own identity may read; reading as dev-1 needs a session.
	if code, _ := c.rpcErr(c.tool("atm_read", map[string]any{"identity": "dev-1"})); code != proxyerr.CodeIdentityConflict {
		t.Errorf("read as an identity not held: code %d", code)
	}
	dev := c.structured(c.tool("codex", map[string]any{"prompt": "x", "identity": "dev-1", "auto_mail": false}))
	n := c.structured(c.tool("atm_pending_count", map[string]any{"agent_id": dev["agent_id"]}))
	if n["count"] != float64(1) {
		t.Errorf("pending = %v", n)
	}
	peek := c.structured(c.tool("atm_read", map[string]any{"agent_id": dev["agent_id"], "mark_read": false}))
	if peek["count"] != float64(1) {
		t.Errorf("read = %v", peek)
	}
	read := c.structured(c.tool("atm_read", map[string]any{"identity": "dev-1"}))
	msgs := read["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["message"] != "hello dev" {
		t.Errorf("read = %v", read)
	}
	if n := c.structured(c.tool("atm_pending_count", map[string]any{"identity": "dev-1"})); n["count"] != float64(0) {
		t.Errorf("pending after read = %v", n)
	}
	b := c.structured(c.tool("atm_broadcast", map[string]any{"message": "all hands", "identity": "proxy"}))
	if got := len(b["recipients"].([]any)); got != 4 {
		t.Errorf("broadcast reached %d members, want 4: %v", got, b)
	}
}

// TestEventsDroppedWhenClientGone: once the client cannot be written to,
// events are dropped (not queued) and counted per session, and turns still
// complete.
func TestEventsDroppedWhenClientGone(t *testing.T) {
	c := startProxy(t, harnessOpts{})
	c.initialize(false)
	res := c.structured(c.tool("codex", map[string]any{"prompt": "start", "identity": "arch"}))
	sess := c.srv.sessions.Get(res["agent_id"].(string))
	c.hangUp()
	c.send("ping", nil) // its answer finds the pipe closed
	poll.Until(t, "the proxy to see the client gone", func() bool {
		return !c.srv.conn.Event(func() *jsonrpcframe.Message { return nil }, false)
	})
	before := sess.Counts().Dropped
	if !sess.TryMail("EVENTS=25", func(bool) {}) {
		t.Fatal("the mail turn did not start")
	}
	poll.Until(t, "the turn to end", func() bool { return sess.Detail(0).Turns == 2 && sess.Detail(0).Status == "idle" })
	if got := sess.Counts().Dropped - before; got < 25 {
		t.Errorf("dropped %d events, want at least 25", got)
	}
	if n := c.srv.conn.Stats().Queued; n != 0 {
		t.Errorf("%d events queued for a gone client", n)
	}
}

// TestEventsNeverWaitForAStalledClient: the proxy writes to an OS pipe the
// client stops reading. Events are written directly while the pipe has room,
// then queued and, once the queue is full, dropped (FR-19.3, FR-19.4): the
// Codex side never waits, the turn ends in Codex, and when the client reads
// again its answer arrives after the events that were kept, in order.
func TestEventsNeverWaitForAStalledClient(t *testing.T) {
	c := startProxy(t, harnessOpts{osPipe: true, modify: func(o *Options) { o.EventQueue = 50 }})
	c.initialize(false)
	res := c.structured(c.tool("codex", map[string]any{"prompt": "start", "identity": "arch"}))
	sess := c.srv.sessions.Get(res["agent_id"].(string))

	c.stalled.Store(true) // the client stops reading
	// Enough events to fill the pipe (64 KiB) many times over.
	if !sess.TryMail("EVENTS=3000", func(bool) {}) {
		t.Fatal("the mail turn did not start")
	}
	poll.Until(t, "the turn to end while the client does not read", func() bool {
		return sess.Detail(0).Turns == 2 && sess.Detail(0).Status == "idle"
	})
	counts := sess.Counts()
	forwarded, dropped := counts.Forwarded, counts.Dropped
	if dropped == 0 || forwarded == 0 {
		t.Errorf("forwarded %d, dropped %d: want some of each", forwarded, dropped)
	}
	if n := c.srv.conn.Stats().Queued; n > 50 {
		t.Errorf("%d events queued, the bound is 50", n)
	}

	// The client reads again: every event that was kept arrives, and the
	// proxy answers.
	c.stalled.Store(false)
	got := c.structured(c.tool("agent_sessions", map[string]any{}))
	if got["sessions"] == nil {
		t.Fatalf("agent_sessions after the stall: %v", got)
	}
	// agent_status says how many of the session's events were dropped.
	st := c.structured(c.tool("agent_status", map[string]any{"agent_id": sess.Record().AgentID}))
	if ev, _ := st["events"].(map[string]any); ev == nil || int64(ev["dropped"].(float64)) != dropped {
		t.Errorf("agent_status events %v, want dropped %d", st["events"], dropped)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		for _, m := range c.notifications("codex/event") {
			if strings.Contains(string(m.Params), `"agent_id":"`+sess.Record().AgentID+`"`) {
				n++
			}
		}
		if int64(n) >= forwarded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client got %d events of the session, the proxy forwarded %d", n, forwarded)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRepliesAnswerTheRecordedState: a codex-reply's answer (on mcp-server
// written from the Codex reader) comes once the session has recorded the
// turn: agent_status right after the answer shows it, the session idle; the
// request's end does not cancel the answered turn; replies queued behind one
// another are answered in order; a client whose pipe is full still gets its
// answer once it reads again.
func TestRepliesAnswerTheRecordedState(t *testing.T) {
	for _, kind := range []codexchild.Kind{codexchild.KindMCPServer, codexchild.KindAppServer} {
		t.Run(string(kind), func(t *testing.T) {
			c := startProxy(t, harnessOpts{kind: kind, osPipe: true})
			c.initialize(false)
			res := c.structured(c.tool("codex", map[string]any{"prompt": "start", "identity": "arch"}))
			agent := res["agent_id"].(string)
			c.fb.WatchAnswered(true)
			for i := range 5 {
				prompt := fmt.Sprintf("turn %d", i)
				got := c.structured(c.tool("codex-reply", map[string]any{"agent_id": agent, "prompt": prompt}))
				if got["content"] != "echo: "+prompt || got["agent_id"] != agent || got["threadId"] != res["threadId"] || got["status"] != "completed" {
					t.Errorf("reply %d = %v", i, got)
				}
				st := c.structured(c.tool("agent_status", map[string]any{"agent_id": agent}))
				last, _ := st["last_result"].(map[string]any)
				if st["status"] != "idle" || st["turns"] != float64(i+2) || last["content"] != "echo: "+prompt {
					t.Errorf("agent_status right after reply %d: status %v turns %v last %v", i, st["status"], st["turns"], last)
				}
			}
			c.fb.WatchAnswered(false)
			if n := c.fb.CancelledAfterAnswer(); n != 0 {
				t.Errorf("%d turns cancelled after their answer (the request's end reached the turn)", n)
			}
			// Two replies sent at once are answered in order.
			_, a := c.send("tools/call", map[string]any{"name": "codex-reply", "arguments": map[string]any{"agent_id": agent, "prompt": "A"}})
			_, b := c.send("tools/call", map[string]any{"name": "codex-reply", "arguments": map[string]any{"agent_id": agent, "prompt": "B"}})
			for _, q := range []struct {
				ch   chan *jsonrpcframe.Message
				want string
			}{{a, "echo: A"}, {b, "echo: B"}} {
				if got := c.structured(c.wait(q.ch))["content"]; got != q.want {
					t.Errorf("queued reply = %v, want %s", got, q.want)
				}
			}

			// The client stops reading while a turn floods it: the answer
			// waits for the client.
			sess := c.srv.sessions.Get(agent)
			c.stalled.Store(true)
			_, flood := c.send("tools/call", map[string]any{"name": "codex-reply", "arguments": map[string]any{"agent_id": agent, "prompt": "EVENTS=3000"}})
			poll.Until(t, "the flooding turn's end", func() bool { return sess.Detail(0).Turns == 9 })
			c.stalled.Store(false)
			if got := c.structured(c.wait(flood))["content"]; got != "echo: EVENTS=3000" {
				t.Errorf("reply after the stall = %v", got)
			}
		})
	}
}
