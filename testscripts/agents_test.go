package testscripts

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/realacp"
)

// agentParams are the Params of the agent scenarios: the proxy's, plus a
// tag in the environment of serve and so of every agent it starts
// (realacp.TagEnv, passed through MCP_ENV with the other names given), and
// the command "leftover" that checks that none of them is left.
func agentParams(t *testing.T, glob string, envNames ...string) testscript.Params {
	p := proxyParams(t, glob)
	p.Cmds["leftover"] = cmdLeftover
	p.Cmds["sleep"] = cmdSleep
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		env.Setenv(realacp.TagEnv, hex.EncodeToString(b))
		env.Setenv("MCP_ENV", strings.Join(append([]string{realacp.TagEnv}, envNames...), " "))
		return nil
	}
	return p
}

// cmdLeftover fails when a process of the scenario's agents (one that
// carries its tag) is still alive 5 s after the call, and kills it.
//
//	leftover
func cmdLeftover(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: leftover")
	}
	left := realacp.Leftover(ts.Getenv(realacp.TagEnv), 5*time.Second)
	if len(left) > 0 {
		ts.Fatalf("%d process(es) left behind:\n%s", len(left), strings.Join(left, "\n"))
	}
}

// cmdSleep waits for a duration: for a program in the background that
// does something at an interval (status --watch redraws every second).
//
//	sleep DURATION
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// TestAgents runs the agents_*.txtar conversations: sessions of an ACP
// agent kind configured as mockacp (the mock ACP agent, a command of the
// test binary), through agent_start and every agent_* and atm_* tool, on
// either Codex protocol's mockcodex where Codex takes part.
func TestAgents(t *testing.T) {
	p := agentParams(t, "agents_*.txtar", "MOCKACP_STATE", "MOCKACP_LOG")
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		env.Setenv("MOCKCODEX_VERSION", testedAppVersion)
		env.Setenv("MOCKACP_STATE", filepath.Join(env.WorkDir, ".mockacp"))
		return os.MkdirAll(filepath.Join(env.WorkDir, ".mockacp"), 0o755)
	}
	p.Condition = backendCondition("app-server")
	testscript.Run(t, p)
}

// TestMixedTeams runs the mixed_*.txtar conversations: a team of Codex
// (mockcodex) and another agent kind (mockacp), once per Codex protocol, as
// TestProxy runs the proxy's.
func TestMixedTeams(t *testing.T) {
	for _, b := range []struct{ backend, version string }{{"mcp-server", testedMCPVersion}, {"app-server", testedAppVersion}} {
		t.Run(b.backend, func(t *testing.T) {
			t.Parallel() // they wait on turns and mail, not on the CPU
			p := agentParams(t, "mixed_*.txtar", "MOCKACP_STATE", "MOCKACP_LOG")
			setup := p.Setup
			p.Setup = func(env *testscript.Env) error {
				if err := setup(env); err != nil {
					return err
				}
				env.Setenv("BACKEND", b.backend)
				env.Setenv("MOCKCODEX_VERSION", b.version)
				env.Setenv("MOCKACP_STATE", filepath.Join(env.WorkDir, ".mockacp"))
				return os.MkdirAll(filepath.Join(env.WorkDir, ".mockacp"), 0o755)
			}
			p.Condition = backendCondition(b.backend)
			testscript.Run(t, p)
		})
	}
}

// TestRealAgents runs the acp_real.txtar conversation through serve's
// agent_start with each real ACP agent, offline: claude (the pinned
// claude-agent-acp against the loopback Anthropic Messages mock) and
// opencode (the pinned opencode against the loopback OpenAI Chat
// Completions mock), each installed from npm by realacp.Install into
// .cache/acp. The agents run under their presets, found on PATH; the
// scenario's conditions [claude] and [opencode] say which one runs, and
// its command model-hung waits until the model mock holds a request for a
// prompt with HANG (a turn to interrupt). Then acp_mixed_*.txtar with
// claude: a Codex agent (mockcodex) and a Claude agent mail each other
// (acp_mixed_team), and work at once in worktrees of their own, each
// committing on its own branch (acp_mixed_worktree). Then two Claude
// agents edit one file at once, each in its own worktree, with Claude
// Code's own Edit and Write tools (acp_real_worktree). And acp_host with
// claude: claude-agent-acp on a host (the loopback sshd).
func TestRealAgents(t *testing.T) {
	claude := realacp.Install(t, "claude-agent-acp", "node_modules/.bin/claude-agent-acp")
	opencode := realacp.Install(t, "opencode", filepath.Join("node_modules", "opencode-linux-x64", "bin", "opencode"))
	anthropic := realacp.StartAnthropic(t)
	chat := realacp.StartOpenAIChat(t)
	for _, tc := range []struct {
		agent, glob string
		env         func(work string) map[string]string
		hung        <-chan struct{}
	}{
		{"claude", "acp_real.txtar", func(work string) map[string]string { return claudeAgentEnv(claude, work, anthropic.URL()) }, anthropic.Hung()},
		{"opencode", "acp_real.txtar", func(work string) map[string]string { return opencodeAgentEnv(opencode, work, chat.URL()+"/v1") }, chat.Hung()},
		{"claude", "acp_mixed_*.txtar", func(work string) map[string]string { return claudeAgentEnv(claude, work, anthropic.URL()) }, nil},
		{"claude", "acp_real_worktree.txtar", func(work string) map[string]string { return claudeAgentEnv(claude, work, anthropic.URL()) }, nil},
		{"claude", "acp_host.txtar", func(work string) map[string]string { return claudeAgentEnv(claude, work, anthropic.URL()) }, nil},
	} {
		t.Run(tc.agent+"/"+strings.TrimSuffix(tc.glob, ".txtar"), func(t *testing.T) {
			t.Parallel() // they wait on the agents, not on the CPU
			p := agentParams(t, tc.glob)
			p.Cmds["model-hung"] = func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 0 || tc.hung == nil {
					ts.Fatalf("usage: model-hung (in acp_real only)")
				}
				select {
				case <-tc.hung:
				case <-time.After(90 * time.Second):
					ts.Fatalf("no model request for HANG came in 90s")
				}
			}
			setup := p.Setup
			p.Setup = func(env *testscript.Env) error {
				if err := setup(env); err != nil {
					return err
				}
				// A real agent starts in tens of seconds on a loaded
				// machine (opencode: 24 s seen), before its first turn.
				env.Setenv("MCP_TIMEOUT_SECS", "120")
				vars := tc.env(env.WorkDir)
				names := strings.Fields(env.Getenv("MCP_ENV"))
				for k, v := range vars {
					env.Setenv(k, v)
					names = append(names, k)
				}
				env.Setenv("MCP_ENV", strings.Join(names, " "))
				env.Setenv("AGENT", tc.agent)
				env.Setenv("MOCKCODEX_VERSION", testedAppVersion)
				return nil
			}
			p.Condition = func(cond string) (bool, error) {
				switch cond {
				case "claude", "opencode":
					return cond == tc.agent, nil
				}
				return backendCondition("app-server")(cond)
			}
			testscript.Run(t, p)
		})
	}
}

// claudeAgentEnv is the environment of serve under which the claude
// preset's claude-agent-acp (bin) runs offline against the Anthropic mock:
// its directory first on PATH, its configuration under work (apart from
// the teams in work/.claude), the mock's URL and key, nothing else fetched.
func claudeAgentEnv(bin, work, url string) map[string]string {
	return map[string]string{
		"PATH":               filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"AGENT_BIN_DIR":      filepath.Dir(bin), // for a host's PATH (acp_host)
		"CLAUDE_CONFIG_DIR":  filepath.Join(work, ".claude-agent"),
		"ANTHROPIC_BASE_URL": url,
		"ANTHROPIC_API_KEY":  "sk-ant-mock",
		"ANTHROPIC_MODEL":    "claude-sonnet-4-5",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
	}
}

// opencodeAgentEnv is the environment of serve under which the opencode
// preset's opencode (bin) runs offline against the OpenAI Chat Completions
// mock at baseURL: its own config, data and cache under work, the mock as
// its only provider, no models.dev fetch, no updates, plugins or LSP
// downloads. The preset adds the permissions that make it ask.
func opencodeAgentEnv(bin, work, baseURL string) map[string]string {
	home := filepath.Join(work, ".opencode-home")
	cfg, _ := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"mock": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Mock",
			"options": map[string]any{"baseURL": baseURL, "apiKey": "mock-key"},
			"models":  map[string]any{"mock-model": map[string]any{"name": "Mock Model", "tool_call": true}},
		}},
		"model": "mock/mock-model", "small_model": "mock/mock-model",
		"autoupdate": false, "share": "disabled",
	})
	return map[string]string{
		"PATH":            filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_DATA_HOME": filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME": filepath.Join(home, ".cache"), "XDG_STATE_HOME": filepath.Join(home, ".local", "state"),
		"OPENCODE_CONFIG_CONTENT":          string(cfg),
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
		"OPENCODE_DISABLE_SHARE":           "1",
		"OPENCODE_DISABLE_CLAUDE_CODE":     "1",
	}
}
