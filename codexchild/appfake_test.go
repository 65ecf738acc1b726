package codexchild

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
	"github.com/google/go-cmp/cmp"
)

// fakeAppEnv makes the test binary play a scripted codex app-server (see
// runFakeApp) instead of running tests.
const fakeAppEnv = "CODEXCHILD_FAKE_APP"

const fakeAppThread, fakeAppTurn = "01a1ffa3-aaaa-7000-8000-000000000001", "01a1ffa3-bbbb-7000-8000-000000000002"

// runFakeApp is a scripted `codex app-server` whose one turn sends every
// kind of server request the real one may send (neither mockcodex nor the
// recorded runs send most of them) and reports, as the turn's final agent
// message, each answer it got and whether any message it read carried
// "jsonrpc".
func runFakeApp() int {
	r := jsonrpcframe.NewLineReader(os.Stdin, nil)
	w := jsonrpcframe.NewLineWriter(os.Stdout)
	versioned := false
	write := func(m *jsonrpcframe.Message) {
		m.Versioned = false
		_ = w.Write(m)
	}
	respond := func(id jsonrpcframe.ID, v any) {
		m, _ := jsonrpcframe.NewResponse(id, v)
		write(m)
	}
	notify := func(method string, v any) {
		m, _ := jsonrpcframe.NewNotification(method, v)
		write(m)
	}
	read := func() *jsonrpcframe.Message {
		for {
			m, err := r.Read()
			if err != nil {
				if _, ok := err.(*jsonrpcframe.MessageError); ok {
					continue
				}
				os.Exit(0)
			}
			versioned = versioned || m.Versioned
			return m
		}
	}
	with := func(kv ...any) map[string]any {
		m := map[string]any{"threadId": fakeAppThread, "turnId": fakeAppTurn}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for {
		m := read()
		switch m.Method {
		case "initialize":
			respond(m.ID, map[string]any{"userAgent": "x/0.169.0 (fake)", "codexHome": "/nowhere", "platformFamily": "unix", "platformOs": "linux"})
		case "thread/start":
			respond(m.ID, map[string]any{"thread": map[string]any{"id": fakeAppThread}})
		case "turn/start":
			switch os.Getenv(fakeAppEnv) { // accepted_test.go
			case "dieonturn": // read the turn, then died before a word about it
				return 3
			case "dielate":
				time.Sleep(fakeLate)
				return 3
			case "acklate":
				time.Sleep(fakeLate)
				respond(m.ID, map[string]any{"turn": map[string]any{"id": fakeAppTurn, "status": "inProgress"}})
				continue
			}
			respond(m.ID, map[string]any{"turn": map[string]any{"id": fakeAppTurn, "status": "inProgress"}})
			notify("turn/started", map[string]any{"threadId": fakeAppThread, "turn": map[string]any{"id": fakeAppTurn}})
			notify("item/started", with("item", map[string]any{"type": "fileChange", "id": "call_p", "status": "inProgress",
				"changes": []any{map[string]any{"path": "/w/a.txt", "kind": map[string]any{"type": "add"}, "diff": "hi\n"}}}))
			var answers []string
			next := int64(0)
			ask := func(method string, params any) {
				req, _ := jsonrpcframe.NewRequest(jsonrpcframe.IntID(next), method, params)
				next++
				write(req)
				a := read()
				if e := a.Err(); e != nil {
					answers = append(answers, fmt.Sprintf("%s error %d", method, e.Code))
					return
				}
				answers = append(answers, method+" "+string(a.Result))
			}
			ask("item/fileChange/requestApproval", with("itemId", "call_p", "reason", nil))
			ask("execCommandApproval", map[string]any{"conversationId": fakeAppThread, "callId": "c1",
				"command": []string{"bash", "-lc", "echo hi"}, "cwd": "/w", "parsedCmd": []any{}})
			ask("mcpServer/elicitation/request", with("serverName", "s", "message", "ok?"))
			ask("item/tool/requestUserInput", with("itemId", "i1", "isBlocking", true, "questions", []any{}))
			ask("item/permissions/requestApproval", with("itemId", "i2", "cwd", "/w", "startedAtMs", 1, "permissions", map[string]any{}))
			ask("item/tool/call", with("callId", "c2", "tool", "t", "arguments", map[string]any{}))
			ask("attestation/generate", map[string]any{})
			text := strings.Join(answers, "\n") + fmt.Sprintf("\nversioned=%v", versioned)
			item := map[string]any{"type": "agentMessage", "id": "m1", "text": text}
			notify("item/completed", with("item", item))
			notify("turn/completed", map[string]any{"threadId": fakeAppThread, "turn": map[string]any{
				"id": fakeAppTurn, "status": "completed", "error": nil, "items": []any{item}}})
		}
	}
}

// TestAppServerRequests: every server request is answered, approvals by
// the handler in the app-server's (or the legacy) vocabulary, the others by
// the backend itself; nothing the backend writes carries "jsonrpc".
func TestAppServerRequests(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b := newAppBackend(t, Config{Bin: exe, Env: []string{fakeAppEnv + "=1", "GORACE=atexit_sleep_ms=0"}})
	rec := newRecorder(func(a *backend.Approval) backend.Decision {
		if a.Kind == backend.ApprovalPatch {
			return backend.Decision{Kind: backend.Approve}
		}
		return backend.Decision{Kind: backend.Deny, Reason: "nope"}
	})
	res, err := b.Turn(ctxFor(t, 30*time.Second), backend.TurnRequest{Prompt: "go", Handler: rec})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`item/fileChange/requestApproval {"decision":"accept"}`,
		`execCommandApproval {"decision":{"denied":{"rejection":"nope"}}}`,
		`mcpServer/elicitation/request {"action":"decline","content":null}`,
		`item/tool/requestUserInput {"answers":{}}`,
		`item/permissions/requestApproval {"permissions":{},"scope":"turn"}`,
		`item/tool/call {"contentItems":[{"text":"dynamic tools are not supported by atm-agent-mcp","type":"inputText"}],"success":false}`,
		`attestation/generate error -32601`,
		`versioned=false`,
	}, "\n")
	if diff := cmp.Diff(want, res.Text); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if res.ThreadID != fakeAppThread || res.TurnID != fakeAppTurn || res.Status != "completed" {
		t.Errorf("Result = %+v", res)
	}
	_, apps := rec.snapshot()
	if len(apps) != 2 {
		t.Fatalf("approvals = %+v, want 2", apps)
	}
	if a := apps[0]; a.Kind != backend.ApprovalPatch || !strings.Contains(string(a.Changes), "/w/a.txt") || a.CallID != "call_p" || a.ThreadID != fakeAppThread || a.TurnID != fakeAppTurn {
		t.Errorf("patch approval = %+v", a)
	}
	if a := apps[1]; a.Kind != backend.ApprovalExec || a.Command != "echo hi" || a.Cwd != "/w" || a.CallID != "c1" || a.ThreadID != fakeAppThread || a.TurnID != fakeAppTurn {
		t.Errorf("legacy exec approval = %+v", a)
	}
	if v := b.Status().Version; v != "0.169.0" {
		t.Errorf("Version = %q, want 0.169.0 (from the userAgent)", v)
	}
}
