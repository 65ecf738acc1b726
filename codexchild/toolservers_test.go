package codexchild

import (
	"encoding/json"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/google/go-cmp/cmp"
)

// TestToolServersOnTheWire: a thread's ToolServers reach Codex as the
// mcp_servers entries the session layer used to write into Config itself,
// byte for byte, on both protocols: the user's own servers kept, tools
// approved, the server required; Config itself is left as it was.
func TestToolServersOnTheWire(t *testing.T) {
	user := map[string]any{"docs": map[string]any{"command": "docs-mcp"}}
	p := backend.ThreadParams{
		Cwd: "/w", DeveloperInstructions: "dev",
		ToolServers: []backend.ToolServer{{Name: "atm", Command: "/bin/atm-agent-mcp",
			Args: []string{"tools", "--team", "dev", "--identity", "arch"},
			Env:  map[string]string{"ATM_HOME": "/home/atm", "ATM_DEBUG": "1"}}},
		Options: Options{Sandbox: "workspace-write", Config: map[string]any{"mcp_servers": user, "model_reasoning_effort": "low"}},
	}
	// What session.threadParams wrote into Config before ToolServers.
	wantConfig := `{"mcp_servers":{"atm":{"args":["tools","--team","dev","--identity","arch"],"command":"/bin/atm-agent-mcp",` +
		`"default_tools_approval_mode":"approve","env":{"ATM_DEBUG":"1","ATM_HOME":"/home/atm"},"required":true},` +
		`"docs":{"command":"docs-mcp"}},"model_reasoning_effort":"low"}`

	_, mcpParams := toolCallParams(backend.TurnRequest{Prompt: "hi", Params: p})
	mcp, err := json.Marshal(mcpParams)
	if err != nil {
		t.Fatal(err)
	}
	wantMCP := `{"arguments":{"config":` + wantConfig + `,"cwd":"/w","developer-instructions":"dev","prompt":"hi","sandbox":"workspace-write"},"name":"codex"}`
	if diff := cmp.Diff(wantMCP, string(mcp)); diff != "" {
		t.Errorf("mcp-server tools/call params (-want +got):\n%s", diff)
	}

	app, err := json.Marshal(threadParams(p))
	if err != nil {
		t.Fatal(err)
	}
	wantApp := `{"config":` + wantConfig + `,"cwd":"/w","developerInstructions":"dev","sandbox":"workspace-write"}`
	if diff := cmp.Diff(wantApp, string(app)); diff != "" {
		t.Errorf("app-server thread/start params (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff(map[string]any{"mcp_servers": user, "model_reasoning_effort": "low"}, optionsOf(p).Config); diff != "" {
		t.Errorf("Config was changed (-want +got):\n%s", diff)
	}
}

// TestCodexConfig: the config a thread gets, with and without tool
// servers and user config.
func TestCodexConfig(t *testing.T) {
	atm := backend.ToolServer{Name: "atm", Command: "atm", Args: []string{"--identity", "a"}, Env: map[string]string{"ATM_HOME": "/h"}}
	atmEntry := map[string]any{"command": "atm", "args": []string{"--identity", "a"}, "env": map[string]any{"ATM_HOME": "/h"},
		"default_tools_approval_mode": "approve", "required": true}
	tests := []struct {
		name string
		p    backend.ThreadParams
		want map[string]any
	}{
		{"nothing", backend.ThreadParams{}, nil},
		{"config only", backend.ThreadParams{Options: Options{Config: map[string]any{"model": "m"}}}, map[string]any{"model": "m"}},
		{"tool server only", backend.ThreadParams{ToolServers: []backend.ToolServer{atm}}, map[string]any{"mcp_servers": map[string]any{"atm": atmEntry}}},
		{"a user server of the same name is replaced",
			backend.ThreadParams{ToolServers: []backend.ToolServer{atm}, Options: Options{Config: map[string]any{"mcp_servers": map[string]any{"atm": "mine"}}}},
			map[string]any{"mcp_servers": map[string]any{"atm": atmEntry}}},
		{"mcp_servers that is not a table is replaced",
			backend.ThreadParams{ToolServers: []backend.ToolServer{atm}, Options: Options{Config: map[string]any{"mcp_servers": "x"}}},
			map[string]any{"mcp_servers": map[string]any{"atm": atmEntry}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, codexConfig(tt.p)); diff != "" {
				t.Errorf("codexConfig (-want +got):\n%s", diff)
			}
		})
	}
}
