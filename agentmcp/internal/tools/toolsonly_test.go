package tools

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// TestServeTools: the tools-only server a Codex thread talks to lists the
// four ATM tools and acts only as the identity it was started for.
func TestServeTools(t *testing.T) {
	h := newHarness(t) // the team and inboxes
	h.ok("codex", `{"prompt":"hi","identity":"dev-1"}`)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	t.Cleanup(func() { inW.Close(); <-done })
	go func() {
		done <- ServeTools(context.Background(), ToolsOptions{Home: h.home, Team: "dev", Identity: "arch", Version: "1.2.3"}, inR, outW)
		outW.Close()
	}()
	w, r := jsonrpcframe.NewLineWriter(inW), jsonrpcframe.NewLineReader(outR, nil)
	var next int64
	call := func(method string, params any) *jsonrpcframe.Message {
		t.Helper()
		next++
		m, _ := jsonrpcframe.NewRequest(jsonrpcframe.IntID(next), method, params)
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
		resp, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// A line that is not JSON gets a parse error; the server goes on.
	if _, err := io.WriteString(inW, "not json\n"); err != nil {
		t.Fatal(err)
	}
	if bad, err := r.Read(); err != nil || bad.Error == nil || !strings.Contains(string(bad.Error), `"code":-32700`) {
		t.Errorf("a line that is not JSON: %v %v", bad, err)
	}
	init := call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "codex", "version": "1"}})
	if !strings.Contains(string(init.Result), `"version":"1.2.3"`) {
		t.Errorf("initialize: %s", init.Result)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(call("tools/list", nil).Result, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"atm_send", "atm_read", "atm_broadcast", "atm_pending_count"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	sent := call("tools/call", map[string]any{"name": "atm_send", "arguments": map[string]any{"to": "dev-1", "message": "from the thread"}})
	if sent.Error != nil || !strings.Contains(string(sent.Result), `"from":"arch"`) {
		t.Errorf("atm_send: %s %s", sent.Result, sent.Error)
	}
	forged := call("tools/call", map[string]any{"name": "atm_send", "arguments": map[string]any{"to": "dev-1", "message": "x", "identity": "team-lead"}})
	if !strings.Contains(string(forged.Result), `"isError":true`) || !strings.Contains(string(forged.Result), "unknown argument(s) for atm_send: identity") {
		t.Errorf("atm_send as another identity: %s %s", forged.Result, forged.Error)
	}
	// The agent reads its own inbox, filtered by sender: "from" is a
	// filter, not an attempt to act as someone else.
	h.ok("atm_send", `{"identity":"dev-1","to":"arch","message":"from dev-1"}`)
	read := call("tools/call", map[string]any{"name": "atm_read", "arguments": map[string]any{"from": "dev-1"}})
	if read.Error != nil || strings.Contains(string(read.Result), `"isError":true`) || !strings.Contains(string(read.Result), "from dev-1") {
		t.Errorf("atm_read with a from filter: %s %s", read.Result, read.Error)
	}
	got := h.ok("atm_read", `{"identity":"dev-1"}`)
	if msgs, _ := got["messages"].([]any); len(msgs) != 1 {
		t.Errorf("dev-1's inbox: %v", got)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeTools: %v", err)
	}
	done <- nil // for the cleanup
}

// TestEndsTurn: the tools whose result may end a turn are the same for
// every agent kind (the proxy flushes the lead's mail before them).
func TestEndsTurn(t *testing.T) {
	var got []string
	for _, name := range names {
		if EndsTurn(name) {
			got = append(got, name)
		}
	}
	want := []string{"codex", "codex-reply", "agent_wait", "agent_start", "agent_reply", "agent_fork"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools that end a turn (-want +got):\n%s", diff)
	}
}
