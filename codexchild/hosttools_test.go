package codexchild

import (
	"context"
	"regexp"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/toolhttp"
	"github.com/google/go-cmp/cmp"
)

// TestViaHTTP: for Codex on a host the thread's tool servers become
// mcp_servers entries by url, with their bearer token in http_headers,
// approved and required; the caller's other servers and config stay, its
// Options are not changed, and a thread without tool servers is left as
// it is.
func TestViaHTTP(t *testing.T) {
	b := NewAppServer(Config{Bin: "codex"})
	b.tools = toolhttp.New(toolhttp.Config{}) // as with a Host, on this machine's loopback
	t.Cleanup(func() { b.tools.Close(context.Background()) })
	caller := map[string]any{"mcp_servers": map[string]any{"docs": map[string]any{"url": "https://docs.example/mcp"}}, "model_reasoning_effort": "high"}
	p := backend.ThreadParams{Cwd: "/srv/repo", Options: Options{Sandbox: "workspace-write", Config: caller},
		ToolServers: []backend.ToolServer{{Name: "atm", Command: "/bin/atm-agent-mcp", Args: []string{"tools", "--identity", "far"}}}}
	got, err := b.viaHTTP(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got.ToolServers != nil {
		t.Errorf("ToolServers left: %v", got.ToolServers)
	}
	o := optionsOf(got)
	atm, _ := o.Config["mcp_servers"].(map[string]any)["atm"].(map[string]any)
	headers, _ := atm["http_headers"].(map[string]any)
	auth, _ := headers["Authorization"].(string)
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/mcp$`).MatchString(atm["url"].(string)) || !regexp.MustCompile(`^Bearer [0-9a-f]{32}$`).MatchString(auth) {
		t.Errorf("the atm entry %v: want a loopback url and a bearer token", atm)
	}
	delete(atm, "url")
	delete(atm, "http_headers")
	if diff := cmp.Diff(map[string]any{"default_tools_approval_mode": "approve", "required": true}, atm); diff != "" {
		t.Errorf("the atm entry's other keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"url": "https://docs.example/mcp"}, o.Config["mcp_servers"].(map[string]any)["docs"]); diff != "" {
		t.Errorf("the caller's server (-want +got):\n%s", diff)
	}
	if o.Sandbox != "workspace-write" || o.Config["model_reasoning_effort"] != "high" {
		t.Errorf("the thread's options lost: %+v", o)
	}
	if _, ok := caller["mcp_servers"].(map[string]any)["atm"]; ok {
		t.Error("the caller's config was changed")
	}
	plain := backend.ThreadParams{Cwd: "/srv/repo"}
	if got, err := b.viaHTTP(context.Background(), plain); err != nil || got.Options != nil {
		t.Errorf("a thread without tool servers: %+v, %v", got, err)
	}
}
