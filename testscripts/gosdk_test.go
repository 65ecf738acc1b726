//go:build unix

package testscripts

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKClient drives serve with the official Go MCP SDK's client
// (v1.8.0), as another Go program would: on MCP 2026-07-28 (the SDK probes
// server/discover and stays stateless; approvals come back as multi
// round-trip results that its middleware answers and retries) and pinned
// to 2025-11-25 (initialize; approvals are elicitation/create requests),
// on both Codex protocols (mockcodex). The SDK checks every result against
// the tool's outputSchema.
func TestGoSDKClient(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, b := range []struct{ backend, codexVersion string }{{"mcp-server", testedMCPVersion}, {"app-server", testedAppVersion}} {
			t.Run(version+"/"+b.backend, func(t *testing.T) {
				t.Parallel()
				goSDKConversation(t, version, b.backend, b.codexVersion)
			})
		}
	}
}

func goSDKConversation(t *testing.T, version, backend, codexVersion string) {
	dir := t.TempDir()
	teamDir := makeTeam(t, dir, "arch", "dev-1")
	proxy, err := exec.LookPath("atm-agent-mcp")
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "proxy.log")
	cmd := exec.Command(proxy, "serve", "--team", "dev", "--identity", "proxy", "--codex-bin", "mockcodex",
		"--approval-policy", "on-request", "--log-level", "debug", "--log-file", logFile)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ATM_HOME=" + dir, "MOCKCODEX_VERSION=" + codexVersion,
		"GIT_CEILING_DIRECTORIES=" + dir}

	// The user's answers, in order: accept, then decline with a reason.
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	answers := []*mcp.ElicitResult{
		{Action: "accept", Content: map[string]any{}},
		{Action: "decline", Content: map[string]any{"reason": "too risky"}},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-e2e", Version: "1.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params)
			return answers[(len(asked)-1)%len(answers)], nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("serve's log:\n%s", clipLog(string(b), 8000))
		}
	}()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Errorf("negotiated %s, want %s", got, version)
	}
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "atm-agent-mcp" {
		t.Errorf("server info %+v", info)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if len(names) != 19 || names[0] != "codex" {
		t.Errorf("tools: %v", names)
	}

	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: tool error %s", name, text(res))
		}
		return res
	}
	structured := func(res *mcp.CallToolResult) map[string]any {
		t.Helper()
		b, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("structuredContent %s: %v", b, err)
		}
		return m
	}

	// An approval accepted: the command runs, the turn completes.
	res := call("codex", map[string]any{"prompt": "RUN_SHELL ESCALATE CMD=echo approved-by-go", "identity": "arch"})
	sc := structured(res)
	agentID, _ := sc["agent_id"].(string)
	if sc["status"] != "completed" || !strings.Contains(text(res), "approved-by-go") {
		t.Errorf("accepted approval: %v", sc)
	}
	// An approval declined with a reason: the agent is told why.
	res = call("codex-reply", map[string]any{"agent_id": agentID, "prompt": "RUN_SHELL ESCALATE CMD=echo declined-by-go"})
	if sc := structured(res); sc["status"] != "completed" {
		t.Errorf("declined approval: %v", sc)
	}
	if backend == "mcp-server" && !strings.Contains(text(res), "too risky") {
		t.Errorf("the agent was not told the reason: %s", text(res))
	}
	mu.Lock()
	if len(asked) != 2 || !strings.Contains(asked[0].Message, "[arch] Allow Codex to run `echo approved-by-go`") {
		t.Errorf("elicitations: %d, first %+v", len(asked), asked)
	}
	mu.Unlock()

	// Mail as the agent, in its peer's inbox.
	call("atm_send", map[string]any{"identity": "arch", "to": "dev-1", "message": "hello from go"})
	if inbox, _ := os.ReadFile(filepath.Join(teamDir, "inboxes", "dev-1.json")); !strings.Contains(string(inbox), "hello from go") {
		t.Errorf("dev-1's inbox: %s", inbox)
	}
	// A background turn, waited for.
	call("codex-reply", map[string]any{"agent_id": agentID, "prompt": "in the background", "background": true})
	if got := structured(call("agent_wait", map[string]any{"agent_id": agentID, "timeout_secs": 30})); got["done"] != true {
		t.Errorf("agent_wait: %v", got)
	}
	// A proxy error is a JSON-RPC error the SDK returns.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_status", Arguments: map[string]any{"agent_id": "codex-nope"}}); err == nil ||
		!strings.Contains(err.Error(), `no session with agent_id "codex-nope"`) {
		t.Errorf("unknown session: %v", err)
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
