package codexchild

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/mockmodel"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realcodex"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// pongServerEnv makes this test binary a small stdio MCP server with one
// tool, ping, answering "pong from $PONG_AS" (runPongServer).
const pongServerEnv = "CODEXCHILD_PONG_SERVER"

func runPongServer() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		var res string
		switch m.Method {
		case "initialize":
			res = `{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"pong","version":"1"}}`
		case "tools/list":
			res = `{"tools":[{"name":"ping","description":"Answers pong.","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			res = fmt.Sprintf(`{"content":[{"type":"text","text":"pong from %s"}]}`, os.Getenv("PONG_AS"))
		default:
			res = `{}`
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, res)
	}
	return 0
}

// TestHostAppServerReal: the real Codex app-server on a host (the loopback
// sshd, the pinned Codex on its PATH, a CODEX_HOME for the mock model in
// its environment) runs there as a session of the host, reaches the
// thread's tool server, which runs here, by url through the host's
// reverse forward with its bearer token (http_headers), and continues the
// thread on a second turn; Close leaves nothing running there (the
// server's check).
func TestHostAppServerReal(t *testing.T) {
	bin := realcodex.Bin(t, realcodex.AppServer)
	mock, err := mockmodel.Start(mockmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	home := realcodex.NewHome(t, mock.URL(), nil)
	srv := sshtest.Start(t, &sshtest.Options{Path: []string{filepath.Dir(bin)},
		Env: []string{"CODEX_HOME=" + home.Dir, "MOCK_API_KEY=sk-mock", "RUST_LOG=warn", realcodex.TagEnv + "=" + home.Dir}})
	h, err := sshhost.New(sshhost.Config{Name: "box", Dest: srv.Alias, SSHArgs: srv.SSHArgs(), Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := h.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Bin: "codex", Host: h}); err == nil || !strings.Contains(err.Error(), "app-server only") {
		t.Errorf("New on a host without app-server: %v, want a refusal", err)
	}
	b := newAppBackend(t, Config{Bin: filepath.Base(bin), Host: h, Dir: home.WorkDir, Env: []string{pongServerEnv + "=0"}})
	t.Cleanup(func() { // the backend, then its host, before the leak checks
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = b.Close(ctx)
		if err := h.Close(ctx); err != nil {
			t.Errorf("closing the host: %v", err)
		}
	})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := backend.ThreadParams{Cwd: home.WorkDir, ToolServers: []backend.ToolServer{{Name: "atm", Command: exe,
		Env: map[string]string{pongServerEnv: "1", "PONG_AS": "alice"}}}}
	turnCtx, stop := context.WithTimeout(t.Context(), 90*time.Second)
	defer stop()
	res, err := b.Turn(turnCtx, backend.TurnRequest{Prompt: "CALL_TOOL=mcp__atm.ping", Params: p})
	if err != nil || res.IsError || !strings.Contains(res.Text, "pong from alice") {
		t.Fatalf("the tool call from the host: %+v, %v; want the tool's answer", res, err)
	}
	if !slices.ContainsFunc(srv.Processes(), func(p sshtest.Proc) bool { return strings.Contains(p.Cmdline, "app-server") }) {
		t.Errorf("no app-server runs on the host: %v", srv.Processes())
	}
	res2, err := b.Turn(turnCtx, backend.TurnRequest{ThreadID: res.ThreadID, Prompt: "second turn", Params: p})
	if err != nil || res2.ThreadID != res.ThreadID || res2.Text != "MOCK_REPLY: second turn" {
		t.Errorf("the second turn: %+v, %v", res2, err)
	}
	if !mock.SawInput("pong from alice") {
		t.Error("the model never saw the tool's answer")
	}
}
