package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
)

func Example() {
	repo, _ := os.MkdirTemp("", "config-example")
	defer os.RemoveAll(repo)
	os.Mkdir(filepath.Join(repo, ".git"), 0o700)
	os.WriteFile(filepath.Join(repo, ".atm.toml"), []byte(`
[core]
default_team = "atm-dev"

[plugins.atm-agent-mcp]
identity = "codex-architect"
reasoning_effort = "high"

[plugins.atm-agent-mcp.roles.worker]
model = "gpt-5.3-codex"
approval_policy = "never"
`), 0o600)

	subagents := true
	cfg, err := config.Load(config.LoadOptions{
		Flags: config.Flags{Subagents: &subagents},
		Cwd:   repo,
		Home:  repo,
		Env:   func(string) (string, bool) { return "", false },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts, _ := cfg.ThreadDefaults("worker")
	fmt.Println(cfg.Team, cfg.Identity, cfg.Sources["identity"].Key)
	fmt.Printf("%+v\n", ts)
	fmt.Println(cfg.CodexArgs())
	// Output:
	// atm-dev codex-architect plugins.atm-agent-mcp.identity
	// {Role:worker Model:gpt-5.3-codex ReasoningEffort:high Sandbox:workspace-write ApprovalPolicy:never}
	// [-c model_reasoning_effort="high" -c features.multi_agent=true]
}
