package mockcodex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func (c *client) appInit() {
	c.t.Helper()
	c.send(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"probe","title":"Probe","version":"0.0.1"}}}`)
	c.response(1.0)
	c.send(`{"method":"initialized"}`)
}

func (c *client) threadStart(id int, params msg) string {
	c.t.Helper()
	c.send(msg{"id": id, "method": "thread/start", "params": params})
	_, res := c.response(id)
	th, ok := res["result"].(msg)["thread"].(msg)
	if !ok {
		c.t.Fatalf("thread/start: %v", res)
	}
	return th["id"].(string)
}

func (c *client) turn(id int, thread, text string) {
	c.t.Helper()
	c.send(msg{"id": id, "method": "turn/start", "params": msg{"threadId": thread, "input": []any{msg{"type": "text", "text": text}}}})
}

// turnCompleted collects the notifications up to turn/completed.
func (c *client) turnCompleted() ([]msg, msg) {
	c.t.Helper()
	evs := c.until(10*time.Second, func(m msg) bool { return m["method"] == "turn/completed" })
	return evs, evs[len(evs)-1]["params"].(msg)["turn"].(msg)
}

// The methods of app_thread_start_turn.jsonl (0.169.0) for one turn, after
// the turn/start result.
var recordedAppTurn = []string{"thread/status/changed", "turn/started", "item/started", "item/completed", "item/started",
	"item/agentMessage/delta", "item/agentMessage/delta", "item/completed", "thread/tokenUsage/updated",
	"account/rateLimits/updated", "thread/status/changed", "turn/completed"}

func TestAppServerHandshakeAndErrors(t *testing.T) {
	c := start(t, testEnv(t), "app-server")
	c.send(`{"id":0,"method":"thread/start","params":{}}`)
	if diff := cmp.Diff(msg{"id": 0.0, "error": msg{"code": -32600.0, "message": "Not initialized"}}, c.next(5*time.Second)); diff != "" {
		t.Errorf("before initialize (-want +got):\n%s", diff)
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"probe","title":"Probe","version":"0.0.1"}}}`)
	got := c.until(5*time.Second, func(m msg) bool { return m["method"] == "remoteControl/status/changed" })
	want := msg{"id": 1.0, "result": msg{"userAgent": userAgent("probe", appVersion, "probe", "0.0.1"), "codexHome": c.home, "platformFamily": "unix", "platformOs": "linux"}}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("initialize (-want +got):\n%s", diff)
	}
	if got[1]["emittedAtMs"] == nil || got[1]["jsonrpc"] != nil {
		t.Errorf("notification envelope: %v", got[1])
	}
	zero := "00000000-0000-0000-0000-000000000000"
	tests := []struct{ req, want string }{
		{`{"id":2,"method":"initialize","params":{"clientInfo":{"name":"p","version":"0"}}}`, "Already initialized"},
		{`{"id":3,"method":"turn/start","params":{"threadId":"` + zero + `","input":[]}}`, "thread not found: " + zero},
		{`{"id":4,"method":"turn/start","params":{"threadId":"not-a-uuid","input":[]}}`, "invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `n` at 1"},
		{`{"id":5,"method":"thread/resume","params":{"threadId":"` + zero + `"}}`, "no rollout found for thread id " + zero},
		{`{"id":6,"method":"turn/start","params":{"input":[]}}`, "Invalid request: missing field `threadId`"},
		{`{"id":7,"method":"thread/start","params":{"approvalPolicy":"bogus"}}`, "Invalid request: unknown variant `bogus`, expected one of `untrusted`, `on-request`, `granular`, `never`"},
	}
	for _, tt := range tests {
		c.send(tt.req)
		m := c.next(5 * time.Second)
		if got := m["error"].(msg)["message"]; got != tt.want || m["error"].(msg)["code"] != -32600.0 {
			t.Errorf("%s: error %v, want %q", tt.req, m["error"], tt.want)
		}
	}
	c.send(`{"id":8,"method":"no/such/method","params":{}}`)
	if got := c.next(5 * time.Second)["error"].(msg)["message"].(string); !strings.HasPrefix(got, "Invalid request: unknown variant `no/such/method`, expected one of `initialize`") {
		t.Errorf("unknown method: %q", got)
	}
}

func TestAppServerTurnAndResume(t *testing.T) {
	env := testEnv(t)
	c := start(t, env, "app-server")
	c.appInit()
	work := t.TempDir()
	thread := c.threadStart(2, msg{"cwd": work, "approvalPolicy": "on-request", "sandbox": "workspace-write"})
	if m := c.next(5 * time.Second); m["method"] != "thread/started" {
		t.Fatalf("after thread/start: %v", m)
	}
	c.turn(3, thread, "hello from app-server probe")
	pre, res := c.response(3)
	if diff := cmp.Diff([]string{"warning"}, types(pre)); diff != "" {
		t.Errorf("before the turn/start result (-want +got):\n%s", diff)
	}
	if st := res["result"].(msg)["turn"].(msg)["status"]; st != "inProgress" {
		t.Errorf("turn/start status = %v", st)
	}
	evs, turn := c.turnCompleted()
	if diff := cmp.Diff(recordedAppTurn, types(evs)); diff != "" {
		t.Errorf("turn notifications (-recorded +got):\n%s", diff)
	}
	if turn["status"] != "completed" || turn["items"].([]any)[0].(msg)["text"] != "MOCK_REPLY: hello from app-server probe" {
		t.Errorf("turn = %v", turn)
	}
	c.turn(4, thread, "FAIL500 now")
	c.response(4)
	evs, turn = c.turnCompleted()
	wantErr := msg{"message": "We’re currently experiencing high demand, which may cause temporary errors.", "codexErrorInfo": "internalServerError", "additionalDetails": nil, "misalignment": nil}
	if diff := cmp.Diff(wantErr, turn["error"]); diff != "" || turn["status"] != "failed" {
		t.Errorf("failed turn %v (-want +got):\n%s", turn["status"], diff)
	}
	if diff := cmp.Diff([]string{"thread/status/changed", "turn/started", "item/started", "item/completed", "thread/status/changed", "error", "turn/completed"}, types(evs)); diff != "" {
		t.Errorf("failed turn notifications (-want +got):\n%s", diff)
	}

	// A new process resumes the thread from its rollout.
	c2 := start(t, env, "app-server")
	c2.appInit()
	c2.send(msg{"id": 2, "method": "thread/resume", "params": msg{"threadId": thread}})
	pre, res = c2.response(2)
	if diff := cmp.Diff([]string{"deprecationNotice", "thread/status/changed"}, types(pre)[len(types(pre))-2:]); diff != "" {
		t.Errorf("resume notifications (-want +got):\n%s", diff)
	}
	th := res["result"].(msg)["thread"].(msg)
	turns := th["turns"].([]any)
	if len(turns) != 2 || th["cwd"] != work || th["preview"] != "hello from app-server probe" {
		t.Fatalf("resumed thread: %v", th)
	}
	first := turns[0].(msg)
	var texts []string
	for _, it := range first["items"].([]any) {
		m := it.(msg)
		if m["type"] == "agentMessage" {
			texts = append(texts, m["text"].(string))
		} else {
			texts = append(texts, m["content"].([]any)[0].(msg)["text"].(string))
		}
	}
	if diff := cmp.Diff([]string{"hello from app-server probe", "MOCK_REPLY: hello from app-server probe"}, texts); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if turns[1].(msg)["status"] != "failed" {
		t.Errorf("second turn: %v", turns[1])
	}
	c2.turn(3, thread, "turn after resume")
	c2.response(3)
	_, turn = c2.turnCompleted()
	if turn["items"].([]any)[0].(msg)["text"] != "MOCK_REPLY: turn after resume" {
		t.Errorf("turn after resume: %v", turn)
	}
	matches, _ := filepath.Glob(filepath.Join(env["CODEX_HOME"], "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if b, _ := os.ReadFile(matches[0]); !strings.HasPrefix(string(b), `{"timestamp":`) || !strings.Contains(strings.SplitN(string(b), "\n", 2)[0], `"ordinal":0,"type":"session_meta"`) {
		t.Errorf("rollout first line: %.200s", b)
	}
}

func TestAppServerApprovals(t *testing.T) {
	tests := []struct {
		name, answer string
		item, status string // item/completed status of the command, turn status
		text         string
		ran          bool
	}{
		{"accept", `"result":{"decision":"accept"}`, "completed", "completed", "MOCK_DONE: tool output was: Chunk ID: ", true},
		{"acceptForSession", `"result":{"decision":"acceptForSession"}`, "completed", "completed", "MOCK_DONE: tool output was: Chunk ID: ", true},
		{"decline", `"result":{"decision":"decline"}`, "declined", "completed", rejected("rejected by user"), false},
		{"cancel", `"result":{"decision":"cancel"}`, "declined", "interrupted", "", false},
		{"legacy approved", `"result":{"decision":"approved"}`, "failed", "completed", rejected("approval request failed"), false},
		{"JSON-RPC error", `"error":{"code":-32000,"message":"client rejected approval"}`, "failed", "completed", rejected("approval request failed"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := start(t, testEnv(t), "app-server")
			c.appInit()
			work := t.TempDir()
			thread := c.threadStart(2, msg{"cwd": work, "approvalPolicy": "on-request", "sandbox": "workspace-write"})
			c.turn(3, thread, "RUN_SHELL ESCALATE please")
			evs := c.until(5*time.Second, func(m msg) bool { return m["method"] == "item/commandExecution/requestApproval" })
			req := evs[len(evs)-1]
			p := req["params"].(msg)
			if p["command"] != "/bin/bash -lc 'touch mock_shell_probe.txt'" || p["reason"] != justification || p["cwd"] != work || req["id"] != 0.0 {
				t.Errorf("request = %v", req)
			}
			c.send(`{"id":0,` + tt.answer + `}`)
			evs, turn := c.turnCompleted()
			if types(evs)[0] != "serverRequest/resolved" {
				t.Errorf("first after the answer: %v", types(evs))
			}
			for _, e := range evs {
				if e["method"] == "item/completed" && e["params"].(msg)["item"].(msg)["type"] == "commandExecution" {
					if got := e["params"].(msg)["item"].(msg)["status"]; got != tt.item {
						t.Errorf("command item status = %v, want %s", got, tt.item)
					}
				}
			}
			if turn["status"] != tt.status {
				t.Errorf("turn status = %v, want %s", turn["status"], tt.status)
			}
			if tt.text != "" {
				got := turn["items"].([]any)[0].(msg)["text"].(string)
				if tt.ran && !strings.HasPrefix(got, tt.text) || !tt.ran && got != tt.text {
					t.Errorf("text = %q, want %q", got, tt.text)
				}
			}
			if _, err := os.Stat(filepath.Join(work, "mock_shell_probe.txt")); (err == nil) != tt.ran {
				t.Errorf("ran = %v, want %v", err == nil, tt.ran)
			}
		})
	}
}

func TestAppServerInterruptAndPatch(t *testing.T) {
	c := start(t, testEnv(t), "app-server")
	c.appInit()
	work := t.TempDir()
	thread := c.threadStart(2, msg{"cwd": work, "sandbox": "read-only"})
	c.turn(3, thread, "SLOW=20 take your time")
	_, res := c.response(3)
	turnID := res["result"].(msg)["turn"].(msg)["id"].(string)
	c.until(5*time.Second, func(m msg) bool { return m["method"] == "item/completed" })
	c.send(msg{"id": 4, "method": "turn/interrupt", "params": msg{"threadId": thread, "turnId": turnID}})
	_, res = c.response(4)
	if diff := cmp.Diff(msg{}, res["result"]); diff != "" {
		t.Errorf("interrupt result: %v", res)
	}
	evs, turn := c.turnCompleted()
	if turn["status"] != "interrupted" || len(evs) != 2 {
		t.Errorf("interrupted turn: %v after %v", turn, types(evs))
	}
	c.send(msg{"id": 5, "method": "turn/interrupt", "params": msg{"threadId": thread, "turnId": turnID}})
	_, res = c.response(5)
	if res["error"].(msg)["message"] != "no active turn to interrupt" {
		t.Errorf("second interrupt: %v", res)
	}

	// A patch under read-only needs approval; the diff is in item/started.
	c.turn(6, thread, "PATCH=new.txt")
	c.response(6)
	evs = c.until(5*time.Second, func(m msg) bool { return m["method"] == "item/fileChange/requestApproval" })
	var changes any
	for _, e := range evs {
		if e["method"] == "item/started" && e["params"].(msg)["item"].(msg)["type"] == "fileChange" {
			changes = e["params"].(msg)["item"].(msg)["changes"]
		}
	}
	abs := filepath.Join(work, "new.txt")
	if diff := cmp.Diff([]any{msg{"path": abs, "kind": msg{"type": "add"}, "diff": patchContent}}, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	req := evs[len(evs)-1]
	c.send(msg{"id": req["id"], "result": msg{"decision": "accept"}})
	evs, turn = c.turnCompleted()
	if b, err := os.ReadFile(abs); err != nil || string(b) != patchContent || turn["status"] != "completed" {
		t.Errorf("file %q %v, turn %v", b, err, turn["status"])
	}
	found := false
	for _, e := range evs {
		found = found || e["method"] == "turn/diff/updated"
	}
	if !found {
		t.Errorf("no turn/diff/updated in %v", types(evs))
	}
}

func TestAppServerToolServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := start(t, testEnv(t), "app-server")
	c.appInit()
	cfg := msg{"mcp_servers": msg{"mail": msg{"command": exe, "args": []any{"-test.run=^$"}, "required": true,
		"env": msg{"MOCKCODEX_TEST_TOOLSERVER": "1", "MOCKCODEX_TEST_IDENTITY": "carol"}}}}
	c.send(msg{"id": 2, "method": "thread/start", "params": msg{"cwd": t.TempDir(), "config": cfg}})
	pre, res := c.response(2)
	var statuses []string
	for _, m := range pre {
		if m["method"] == "mcpServer/startupStatus/updated" {
			statuses = append(statuses, m["params"].(msg)["status"].(string))
		}
	}
	if diff := cmp.Diff([]string{"starting", "ready"}, statuses); diff != "" {
		t.Errorf("startup statuses (-want +got):\n%s", diff)
	}
	thread := res["result"].(msg)["thread"].(msg)["id"].(string)
	c.turn(3, thread, `CALL_TOOL=mcp__mail.echo ARGS={"text":"yo"}`)
	// default approval mode: app-server asks with mcpServer/elicitation/request
	evs := c.until(5*time.Second, func(m msg) bool { return m["method"] == "mcpServer/elicitation/request" })
	req := evs[len(evs)-1]
	c.send(msg{"id": req["id"], "result": msg{"action": "accept", "content": msg{}}})
	_, turn := c.turnCompleted()
	got := turn["items"].([]any)[0].(msg)["text"].(string)
	if !strings.HasSuffix(got, "\nOutput:\nidentity=carol secret= leaked= text=yo") {
		t.Errorf("text = %q", got)
	}
}
