package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// presetAgents are the agents of a configuration that configures none.
func presetAgents() map[string]AgentConfig {
	return map[string]AgentConfig{
		"claude": {
			Name: "claude", Preset: "claude", Command: "claude-agent-acp", Args: []string{},
			Env: map[string]string{
				"IS_SANDBOX": "1", "ENABLE_TOOL_SEARCH": "false",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
			},
			Mode: "default", ConfigOptions: []AgentOption{}, Resume: "load", Approval: "ask", MCPTransport: "stdio", Enabled: true,
			ModelWire: "Anthropic Messages", Install: "npm install -g @agentclientprotocol/claude-agent-acp",
		},
		"gemini": {
			Name: "gemini", Preset: "gemini", Command: "gemini", Args: []string{"--acp"},
			Env:           map[string]string{"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"},
			ConfigOptions: []AgentOption{}, Resume: "none", Approval: "ask", MCPTransport: "stdio", Enabled: true,
			ModelWire: "Gemini streamGenerateContent", Install: "npm install -g @google/gemini-cli",
		},
		"opencode": {
			Name: "opencode", Preset: "opencode", Command: "opencode", Args: []string{"acp"},
			Env: map[string]string{
				"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
				"OPENCODE_PERMISSION": `{"bash":"ask","edit":"ask"}`,
			},
			ConfigOptions: []AgentOption{}, Resume: "load", Approval: "ask", MCPTransport: "stdio", Enabled: true,
			ModelWire: "OpenAI Chat Completions", Install: "npm install -g opencode-ai",
		},
	}
}

// cmpAgents compares agents without their sources (checked on their own).
var cmpAgents = []cmp.Option{
	cmpopts.IgnoreFields(AgentConfig{}, "Sources"),
	cmp.AllowUnexported(AgentConfig{}),
}

// TestAgentPresets: with no configuration every preset is there, each value
// from the preset or the default.
func TestAgentPresets(t *testing.T) {
	f := newFixture(t)
	c := f.load(t, Flags{})
	if diff := cmp.Diff(presetAgents(), c.Agents, cmpAgents...); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	wantSources := map[string]string{
		"agents.claude.command":                   "preset claude",
		"agents.claude.mode":                      "preset claude",
		"agents.claude.approval":                  "default",
		"agents.claude.enabled":                   "default",
		"agents.claude.env.IS_SANDBOX":            "preset claude",
		"agents.gemini.args":                      "preset gemini",
		"agents.gemini.mode":                      "default",
		"agents.gemini.resume":                    "preset gemini",
		"agents.opencode.env.OPENCODE_PERMISSION": "preset opencode",
	}
	for k, want := range wantSources {
		if got := c.Sources[k].String(); got != want {
			t.Errorf("source of %s = %q, want %q", k, got, want)
		}
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
}

// TestAgentOverrides: a section named like a preset overrides the fields it
// sets, user values winning over the preset's (serve's own environment
// too), the env and config_options tables merging entry by entry across
// files; a user-defined agent takes its command as an array.
func TestAgentOverrides(t *testing.T) {
	type check struct {
		key, value, source string // value "" = not in Env / not set
	}
	tests := []struct {
		name         string
		global, repo string
		env          map[string]string
		agent        string
		want         func(a *AgentConfig)
		sources      []check
	}{
		{
			name: "preset overridden by one file",
			repo: `
[plugins.atm-agent-mcp.agents.claude]
command = "/opt/claude/bin/claude-agent-acp"
mode = "acceptEdits"
env = { ANTHROPIC_BASE_URL = "http://127.0.0.1:9", IS_SANDBOX = "0" }
config_options = { model = "claude-sonnet-4-5" }
`,
			env:   map[string]string{"DISABLE_AUTOUPDATER": "0"},
			agent: "claude",
			want: func(a *AgentConfig) {
				a.Command = "/opt/claude/bin/claude-agent-acp"
				a.Mode = "acceptEdits"
				a.Env["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"
				a.Env["IS_SANDBOX"] = "0"
				a.Env["DISABLE_AUTOUPDATER"] = "0"
				a.ConfigOptions = []AgentOption{{ID: "model", Value: "claude-sonnet-4-5"}}
			},
			sources: []check{
				{"command", "", "file REPO (plugins.atm-agent-mcp.agents.claude.command)"},
				{"mode", "", "file REPO (plugins.atm-agent-mcp.agents.claude.mode)"},
				{"env.IS_SANDBOX", "", "file REPO (plugins.atm-agent-mcp.agents.claude.env.IS_SANDBOX)"},
				{"env.DISABLE_AUTOUPDATER", "", "env DISABLE_AUTOUPDATER"},
				{"env.ENABLE_TOOL_SEARCH", "", "preset claude"},
				{"config_options.model", "", "file REPO (plugins.atm-agent-mcp.agents.claude.config_options.model)"},
				{"args", "", "preset claude"},
			},
		},
		{
			name: "team-mail tools over http",
			repo: `
[plugins.atm-agent-mcp.agents.gemini]
mcp_transport = "http"
`,
			agent:   "gemini",
			want:    func(a *AgentConfig) { a.MCPTransport = "http" },
			sources: []check{{"mcp_transport", "", "file REPO (plugins.atm-agent-mcp.agents.gemini.mcp_transport)"}},
		},
		{
			name: "approval agent leaves the preset's ask settings out",
			repo: `
[plugins.atm-agent-mcp.agents.claude]
approval = "agent"
[plugins.atm-agent-mcp.agents.opencode]
approval = "agent"
`,
			agent: "opencode",
			want: func(a *AgentConfig) {
				a.Approval = "agent"
				delete(a.Env, "OPENCODE_PERMISSION")
			},
			sources: []check{{"approval", "", "file REPO (plugins.atm-agent-mcp.agents.opencode.approval)"}},
		},
		{
			name: "opencode's permission merged under the user's permission from the file",
			repo: `
[plugins.atm-agent-mcp.agents.opencode]
env = { OPENCODE_PERMISSION = '{"bash":"allow","webfetch":"deny"}' }
`,
			agent: "opencode",
			want: func(a *AgentConfig) {
				a.Env["OPENCODE_PERMISSION"] = `{"bash":"allow","edit":"ask","webfetch":"deny"}`
			},
			sources: []check{{"env.OPENCODE_PERMISSION", "", "preset opencode merged with file REPO (plugins.atm-agent-mcp.agents.opencode.env.OPENCODE_PERMISSION)"}},
		},
		{
			name:  "opencode's permission merged under serve's environment",
			env:   map[string]string{"OPENCODE_PERMISSION": `{"webfetch":{"*":"deny"}}`},
			agent: "opencode",
			want: func(a *AgentConfig) {
				a.Env["OPENCODE_PERMISSION"] = `{"bash":"ask","edit":"ask","webfetch":{"*":"deny"}}`
			},
			sources: []check{{"env.OPENCODE_PERMISSION", "", "preset opencode merged with env OPENCODE_PERMISSION"}},
		},
		{
			name:    "claude's IS_SANDBOX must be 1 whatever serve's environment says",
			env:     map[string]string{"IS_SANDBOX": "yes"},
			agent:   "claude",
			want:    func(a *AgentConfig) {},
			sources: []check{{"env.IS_SANDBOX", "", "preset claude, over env IS_SANDBOX=yes"}},
		},
		{
			name: "claude's IS_SANDBOX from the agent's table is the user's",
			repo: `
[plugins.atm-agent-mcp.agents.claude]
env = { IS_SANDBOX = "yes" }
`,
			env:     map[string]string{"IS_SANDBOX": "no"},
			agent:   "claude",
			want:    func(a *AgentConfig) { a.Env["IS_SANDBOX"] = "yes" },
			sources: []check{{"env.IS_SANDBOX", "", "file REPO (plugins.atm-agent-mcp.agents.claude.env.IS_SANDBOX)"}},
		},
		{
			// The permission goes in OPENCODE_PERMISSION, so the user's
			// OPENCODE_CONFIG_CONTENT, even one that is not JSON, is theirs.
			name: "opencode's config content is the user's, untouched",
			repo: `
[plugins.atm-agent-mcp.agents.opencode]
env = { OPENCODE_CONFIG_CONTENT = 'model: x' }
`,
			agent: "opencode",
			want: func(a *AgentConfig) {
				a.Env["OPENCODE_CONFIG_CONTENT"] = `model: x`
			},
			sources: []check{
				{"env.OPENCODE_CONFIG_CONTENT", "", "file REPO (plugins.atm-agent-mcp.agents.opencode.env.OPENCODE_CONFIG_CONTENT)"},
				{"env.OPENCODE_PERMISSION", "", "preset opencode"},
			},
		},
		{
			name: "user-defined agent across two files",
			global: `
[plugins.atm-agent-mcp.agents.qwen]
command = "qwen"
args = ["--acp"]
env = { OPENAI_BASE_URL = "http://global", OPENAI_MODEL = "m1" }
config_options = { effort = "low", fast = true }
resume = "none"
`,
			repo: `
[plugins.atm-agent-mcp.agents.qwen]
command = ["npx", "-y", "@qwen-code/qwen-code@0.15.10"]
env = { OPENAI_BASE_URL = "http://repo" }
config_options = { effort = "high" }
`,
			agent: "qwen",
			want: func(a *AgentConfig) {
				*a = AgentConfig{
					Name: "qwen", Command: "npx", Args: []string{"-y", "@qwen-code/qwen-code@0.15.10", "--acp"},
					Env:           map[string]string{"OPENAI_BASE_URL": "http://repo", "OPENAI_MODEL": "m1"},
					ConfigOptions: []AgentOption{{ID: "effort", Value: "high"}, {ID: "fast", Value: true}},
					Resume:        "none", Approval: "ask", MCPTransport: "stdio", Enabled: true,
					Files:      []string{"REPO", "GLOBAL"},
					launchArgs: 2,
				}
			},
			sources: []check{
				{"command", "", "file REPO (plugins.atm-agent-mcp.agents.qwen.command)"},
				{"args", "", "file GLOBAL (plugins.atm-agent-mcp.agents.qwen.args)"},
				{"env.OPENAI_BASE_URL", "", "file REPO (plugins.atm-agent-mcp.agents.qwen.env.OPENAI_BASE_URL)"},
				{"env.OPENAI_MODEL", "", "file GLOBAL (plugins.atm-agent-mcp.agents.qwen.env.OPENAI_MODEL)"},
				{"config_options.fast", "", "file GLOBAL (plugins.atm-agent-mcp.agents.qwen.config_options.fast)"},
				{"mode", "", "default"},
				{"approval", "", "default"},
			},
		},
		{
			name: "a relative program path is the file's",
			repo: `
[plugins.atm-agent-mcp.agents.local]
command = "bin/agent"
enabled = false
`,
			agent: "local",
			want: func(a *AgentConfig) {
				*a = AgentConfig{
					Name: "local", Command: "REPODIR/bin/agent", Args: []string{}, Env: map[string]string{},
					ConfigOptions: []AgentOption{}, Resume: "auto", Approval: "ask", MCPTransport: "stdio", Enabled: false,
					Files: []string{"REPO"},
				}
			},
			sources: []check{{"enabled", "", "file REPO (plugins.atm-agent-mcp.agents.local.enabled)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			paths := strings.NewReplacer("REPODIR", f.repo, "REPO", f.repoFile(), "GLOBAL", f.global())
			if tt.global != "" {
				write(t, f.global(), tt.global)
			}
			if tt.repo != "" {
				write(t, f.repoFile(), tt.repo)
			}
			for k, v := range tt.env {
				f.env[k] = v
			}
			c := f.load(t, Flags{})
			if len(c.Warnings) != 0 {
				t.Errorf("warnings: %v", c.Warnings)
			}
			want, ok := presetAgents()[tt.agent]
			if ok {
				if tt.repo != "" {
					want.Files = []string{f.repoFile()}
				}
			}
			tt.want(&want)
			want.Command = paths.Replace(want.Command)
			for i, p := range want.Files {
				want.Files[i] = paths.Replace(p)
			}
			if diff := cmp.Diff(want, c.Agents[tt.agent], cmpAgents...); diff != "" {
				t.Errorf("agent %s (-want +got):\n%s", tt.agent, diff)
			}
			for _, ch := range tt.sources {
				wantSrc := paths.Replace(ch.source)
				if got := c.Agents[tt.agent].Sources[ch.key].String(); got != wantSrc {
					t.Errorf("source of %s = %q, want %q", ch.key, got, wantSrc)
				}
				if got := c.Sources["agents."+tt.agent+"."+ch.key].String(); got != wantSrc {
					t.Errorf("Config.Sources[agents.%s.%s] = %q, want %q", tt.agent, ch.key, got, wantSrc)
				}
			}
		})
	}
}

// TestAgentErrors: a bad agent section stops Load with the file, key and
// expected form; codex is reserved.
func TestAgentErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		want []string // substrings of the error, REPO standing for the file
	}{
		{"codex is reserved", `
[plugins.atm-agent-mcp.agents.codex]
command = "codex-acp"
`, nil, []string{`REPO: plugins.atm-agent-mcp.agents.codex = a table: expected a name other than codex: "codex" is the built-in Codex backend`}},
		{"upper-case name", `
[plugins.atm-agent-mcp.agents.Claude]
mode = "default"
`, nil, []string{`plugins.atm-agent-mcp.agents.Claude = a table: expected an agent named in lower case: a letter, then letters, digits, - or _ (at most 32) (did you mean claude?)`}},
		{"not a table", `
[plugins.atm-agent-mcp]
agents = "claude"
`, nil, []string{`plugins.atm-agent-mcp.agents = "claude": expected a table of agents`}},
		{"agent without a command", `
[plugins.atm-agent-mcp.agents.qwen]
args = ["--acp"]
`, nil, []string{`REPO: plugins.atm-agent-mcp.agents.qwen.command = (missing): expected the agent's program`}},
		{"bad values, all reported", `
[plugins.atm-agent-mcp.agents.claude]
resume = "always"
approval = "never"
mcp_transport = "ftp"
command = "npx claude-agent-acp"
args = "--acp"
enabled = "yes"
env = { "BAD-NAME" = "x", OK = 1 }
config_options = { model = ["a"] }
`, nil, []string{
			`plugins.atm-agent-mcp.agents.claude.resume = "always": expected one of auto, load, resume, none`,
			`plugins.atm-agent-mcp.agents.claude.approval = "never": expected one of ask, agent`,
			`plugins.atm-agent-mcp.agents.claude.mcp_transport = "ftp": expected one of stdio, http`,
			`plugins.atm-agent-mcp.agents.claude.command = "npx claude-agent-acp": expected the agent's program: a name or path, or an array`,
			`plugins.atm-agent-mcp.agents.claude.args = "--acp": expected an array of strings`,
			`plugins.atm-agent-mcp.agents.claude.enabled = "yes": expected true or false`,
			`plugins.atm-agent-mcp.agents.claude.env.BAD-NAME = "x": expected a variable name`,
			`plugins.atm-agent-mcp.agents.claude.env.OK = 1: expected a string`,
			`plugins.atm-agent-mcp.agents.claude.config_options.model = an array: expected a string, boolean or number`,
		}},
		{"opencode permission that is not JSON", `
[plugins.atm-agent-mcp.agents.opencode.env]
OPENCODE_PERMISSION = "bash: ask"
`, nil, []string{`plugins.atm-agent-mcp.agents.opencode.env.OPENCODE_PERMISSION = "bash: ask": expected a JSON object (the preset merges its permission settings into it`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			write(t, f.repoFile(), tt.file)
			for k, v := range tt.env {
				f.env[k] = v
			}
			_, err := Load(f.opts(Flags{}))
			if !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("Load: %v, want ErrInvalidValue", err)
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "REPO", f.repoFile())
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestAgentWarnings: an unknown key in an agent section is a warning with
// the closest key; serve's own OPENCODE_PERMISSION that is not JSON is a
// warning (serve still starts for its other agents), while its
// OPENCODE_CONFIG_CONTENT, which the preset does not touch, is none of its
// business.
func TestAgentWarnings(t *testing.T) {
	f := newFixture(t)
	write(t, f.repoFile(), `
[plugins.atm-agent-mcp.agents.claude]
comand = "x"
enviroment = { A = "b" }
colour = "blue"
`)
	f.env["OPENCODE_PERMISSION"] = "not json"
	f.env["OPENCODE_CONFIG_CONTENT"] = "not json"
	c := f.load(t, Flags{})
	p := f.repoFile()
	want := []Warning{
		{File: p, Key: "plugins.atm-agent-mcp.agents.claude.colour", Message: "unknown agent key, ignored"},
		{File: p, Key: "plugins.atm-agent-mcp.agents.claude.comand", Message: "unknown agent key, ignored (did you mean command?)"},
		{File: p, Key: "plugins.atm-agent-mcp.agents.claude.enviroment", Message: "unknown agent key, ignored"},
		{File: "env OPENCODE_PERMISSION", Key: "agents.opencode.env.OPENCODE_PERMISSION",
			Message: "not a JSON object (invalid character 'o' in literal null (expecting 'u')): the opencode preset cannot merge the settings that make opencode ask for permission into it"},
	}
	if diff := cmp.Diff(want, c.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	for _, k := range []string{"OPENCODE_PERMISSION", "OPENCODE_CONFIG_CONTENT"} {
		if _, ok := c.Agents["opencode"].Env[k]; ok {
			t.Errorf("opencode's env holds %s; want serve's own passed through untouched", k)
		}
	}
}

// TestAgentLookup: Config.Agent returns enabled agents and refuses the
// rest with the sentinel errors.
func TestAgentLookup(t *testing.T) {
	f := newFixture(t)
	write(t, f.repoFile(), `
[plugins.atm-agent-mcp.agents.gemini]
enabled = false
[plugins.atm-agent-mcp.agents.goose]
command = ["/opt/goose", "--profile", "x"]
args = ["acp"]
env = { GOOSE_API_KEY = "sk-123456" }
`)
	c := f.load(t, Flags{})
	tests := []struct {
		name    string
		wantErr error
		msg     string
	}{
		{"claude", nil, ""},
		{"goose", nil, ""},
		{"gemini", ErrAgentDisabled, "agent disabled: gemini is switched off by file " + f.repoFile() + " (plugins.atm-agent-mcp.agents.gemini.enabled)"},
		{"qwen", ErrUnknownAgent, `unknown agent "qwen": the agents are codex, claude, goose, opencode (define others in [plugins.atm-agent-mcp.agents.<name>])`},
		{"codex", ErrUnknownAgent, `unknown agent "codex": codex is the built-in Codex backend, not an ACP agent`},
	}
	for _, tt := range tests {
		a, err := c.Agent(tt.name)
		if !errors.Is(err, tt.wantErr) || (err != nil && err.Error() != tt.msg) {
			t.Errorf("Agent(%q) = %v, want %v (%s)", tt.name, err, tt.wantErr, tt.msg)
		}
		if err == nil && a.Name != tt.name {
			t.Errorf("Agent(%q).Name = %q", tt.name, a.Name)
		}
	}
	g := c.Agents["goose"]
	if got, want := g.CommandLine(), []string{"/opt/goose", "--profile", "x", "acp"}; !cmp.Equal(got, want) {
		t.Errorf("CommandLine = %q, want %q", got, want)
	}
	if got, want := g.VersionCommand(), []string{"/opt/goose", "--profile", "x", "--version"}; !cmp.Equal(got, want) {
		t.Errorf("VersionCommand = %q, want %q", got, want)
	}
	if got, want := g.EnvList(), []string{"GOOSE_API_KEY=sk-123456"}; !cmp.Equal(got, want) {
		t.Errorf("EnvList = %q, want %q", got, want)
	}
	if got, want := c.Agents["gemini"].VersionCommand(), []string{"gemini", "--version"}; !cmp.Equal(got, want) {
		t.Errorf("gemini VersionCommand = %q, want %q", got, want)
	}
	// config shows a secret's length only.
	for _, e := range c.Entries() {
		if e.Key == "agents.goose.env.GOOSE_API_KEY" && e.Value != "(secret, 9 characters)" {
			t.Errorf("entry %s = %v, want the secret hidden", e.Key, e.Value)
		}
	}
	if !g.Configured() || c.Agents["claude"].Configured() {
		t.Errorf("Configured: goose %v, claude %v; want true, false", g.Configured(), c.Agents["claude"].Configured())
	}
}

// TestAgentEntries: config lists each agent's values with their sources,
// the command as written (a string, or the array with its first
// arguments) and the args apart from it.
func TestAgentEntries(t *testing.T) {
	f := newFixture(t)
	write(t, f.repoFile(), `
[plugins.atm-agent-mcp.agents.qwen]
command = ["npx", "-y", "@qwen-code/qwen-code"]
args = ["--acp"]
`)
	c := f.load(t, Flags{})
	got := map[string]Entry{}
	for _, e := range c.Entries() {
		if strings.HasPrefix(e.Key, "agents.qwen.") || strings.HasPrefix(e.Key, "agents.gemini.") {
			got[e.Key] = e
		}
	}
	file := func(k string) Source {
		return Source{Kind: SourceFile, Detail: f.repoFile(), Key: "plugins.atm-agent-mcp.agents.qwen." + k}
	}
	want := map[string]Entry{
		"agents.qwen.enabled":                          {"agents.qwen.enabled", true, Source{Kind: SourceDefault}},
		"agents.qwen.command":                          {"agents.qwen.command", []string{"npx", "-y", "@qwen-code/qwen-code"}, file("command")},
		"agents.qwen.args":                             {"agents.qwen.args", []string{"--acp"}, file("args")},
		"agents.qwen.mode":                             {"agents.qwen.mode", nil, Source{Kind: SourceDefault}},
		"agents.qwen.resume":                           {"agents.qwen.resume", "auto", Source{Kind: SourceDefault}},
		"agents.qwen.approval":                         {"agents.qwen.approval", "ask", Source{Kind: SourceDefault}},
		"agents.qwen.mcp_transport":                    {"agents.qwen.mcp_transport", "stdio", Source{Kind: SourceDefault}},
		"agents.qwen.host":                             {"agents.qwen.host", nil, Source{Kind: SourceDefault}},
		"agents.gemini.enabled":                        {"agents.gemini.enabled", true, Source{Kind: SourceDefault}},
		"agents.gemini.command":                        {"agents.gemini.command", "gemini", Source{Kind: SourcePreset, Detail: "gemini"}},
		"agents.gemini.args":                           {"agents.gemini.args", []string{"--acp"}, Source{Kind: SourcePreset, Detail: "gemini"}},
		"agents.gemini.mode":                           {"agents.gemini.mode", nil, Source{Kind: SourceDefault}},
		"agents.gemini.resume":                         {"agents.gemini.resume", "none", Source{Kind: SourcePreset, Detail: "gemini"}},
		"agents.gemini.approval":                       {"agents.gemini.approval", "ask", Source{Kind: SourceDefault}},
		"agents.gemini.mcp_transport":                  {"agents.gemini.mcp_transport", "stdio", Source{Kind: SourceDefault}},
		"agents.gemini.host":                           {"agents.gemini.host", nil, Source{Kind: SourceDefault}},
		"agents.gemini.env.GEMINI_CLI_NO_RELAUNCH":     {"agents.gemini.env.GEMINI_CLI_NO_RELAUNCH", "true", Source{Kind: SourcePreset, Detail: "gemini"}},
		"agents.gemini.env.GEMINI_CLI_TRUST_WORKSPACE": {"agents.gemini.env.GEMINI_CLI_TRUST_WORKSPACE", "true", Source{Kind: SourcePreset, Detail: "gemini"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}
