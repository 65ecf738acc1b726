package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Agent kinds: besides Codex (driven natively, configured by the keys of
// [plugins.atm-agent-mcp]), any coding agent that speaks the Agent Client
// Protocol, started from a preset or from a section
// [plugins.atm-agent-mcp.agents.<name>].

// CodexAgent is the reserved name of the built-in Codex backend; no agent
// section may take it.
const CodexAgent = "codex"

// Allowed values of the enumerated agent keys.
var (
	// AgentResumes say how a session of the agent is resumed after serve
	// restarts: auto (session/load when the agent advertises it, else
	// session/resume), load (session/load only), resume (session/resume
	// only) or none; when the method is not offered or fails, and with
	// none, the session is started anew, seeded from the proxy's own
	// transcript.
	AgentResumes = []string{"auto", "load", "resume", "none"}
	// AgentApprovals say who decides the agent's permission requests: ask
	// (the preset's mode and settings that make the agent send
	// session/request_permission are applied, and every request goes
	// through the approval bridge as Codex's do) or agent (they are not
	// applied: the agent's own default policy decides, which for
	// claude-agent-acp is its model, for opencode its configuration, allow
	// unless set; requests it still sends go through the bridge).
	AgentApprovals = []string{"ask", "agent"}
	// AgentTransports say how the agent gets its team-mail tools (the
	// per-agent MCP server): stdio (a server the agent starts, which every
	// ACP agent takes) or http (served by serve on a loopback endpoint with
	// a token of its own, for agents that refuse stdio servers, such as
	// GitHub Copilot CLI).
	AgentTransports = []string{"stdio", "http"}
)

// Defaults of the agent keys.
const (
	DefaultAgentResume    = "auto"
	DefaultAgentApproval  = "ask"
	DefaultAgentTransport = "stdio"
)

// SourcePreset is the source kind of an agent value that comes from a
// built-in preset ("preset claude").
const SourcePreset SourceKind = "preset"

// ErrUnknownAgent is wrapped by [Config.Agent] for a name that is neither a
// preset nor a configured agent.
var ErrUnknownAgent = errors.New("unknown agent")

// ErrAgentDisabled is wrapped by [Config.Agent] for an agent configured
// with enabled = false.
var ErrAgentDisabled = errors.New("agent disabled")

// AgentPreset is what atm-agent-mcp knows about an agent kind without any
// configuration (measured with the agents' npm packages, 2026-11-25).
type AgentPreset struct {
	Name    string   `json:"name"`
	Command string   `json:"command"` // program, looked up in PATH
	Args    []string `json:"args,omitempty"`
	// Env is set in the agent's environment unless the user sets the
	// variable (in the agent's env table or serve's own environment).
	Env map[string]string `json:"env,omitempty"`
	// AskMode is the session mode that makes the agent ask for permission
	// (set with session/set_mode); "" when its default mode asks.
	AskMode string `json:"ask_mode,omitempty"`
	// AskEnv are variables that make the agent ask, set only with approval
	// "ask". A variable in jsonEnv is a JSON object merged under the
	// user's own value instead of replacing it.
	AskEnv map[string]string `json:"ask_env,omitempty"`
	Resume string            `json:"resume"` // one of AgentResumes
	// ModelWire is the model API the agent speaks (for the docs, and for a
	// loopback mock in tests).
	ModelWire string `json:"model_wire"`
	// Package is the npm package that installs Command.
	Package string `json:"package"`
}

// Install returns the command that installs the preset's agent.
func (p AgentPreset) Install() string { return "npm install -g " + p.Package }

// opencodeAskPermission is the opencode permission object that makes it ask
// before running a command or editing a file (its default policy allows
// both), set in OPENCODE_PERMISSION and merged under the user's own value
// of that variable. This is the one place of that recipe.
//
// It goes in OPENCODE_PERMISSION, not in OPENCODE_CONFIG_CONTENT's
// "permission": measured with opencode 1.18.33 (codexchild/acp,
// TestOpencodeACP), a project's own opencode.json with
// {"permission":{"bash":"allow","edit":"allow"}} wins over
// OPENCODE_CONFIG_CONTENT, so the agent would run commands without asking,
// whereas OPENCODE_PERMISSION is merged over every config file and holds.
const opencodeAskPermission = `{"bash":"ask","edit":"ask"}`

// jsonEnv are the variables whose preset value is a JSON object merged
// under the user's value (user keys win, object by object) rather than
// replaced by it. A variable is merged only where a preset sets it.
var jsonEnv = []string{"OPENCODE_CONFIG_CONTENT", "OPENCODE_PERMISSION"}

// exactEnv are the preset variables whose value the agent needs exactly: a
// different value in serve's own environment is replaced by the preset's
// (one in the agent's env table is the user's choice and kept). Claude
// Code run as root starts only with IS_SANDBOX=1 (it compares with "1";
// measured with claude-agent-acp 0.101.0, whose own check takes any
// value), and a machine may well have IS_SANDBOX=yes.
var exactEnv = []string{"IS_SANDBOX"}

// presets are the built-in agent kinds.
var presets = []AgentPreset{
	{
		Name:    "claude",
		Command: "claude-agent-acp",
		Env: map[string]string{
			// As root, session/new fails with "--dangerously-skip-permissions
			// cannot be used with root/sudo" (bypass_root) without it.
			"IS_SANDBOX": "1",
			// Else MCP tools (the team-mail tools) hide behind ToolSearch,
			// absent from the model's first tool list.
			"ENABLE_TOOL_SEARCH":                       "false",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_AUTOUPDATER":                      "1",
		},
		// The adapter starts in "auto": the model decides approvals.
		AskMode:   "default",
		Resume:    "load",
		ModelWire: "Anthropic Messages",
		Package:   "@agentclientprotocol/claude-agent-acp",
	},
	{
		Name:    "gemini",
		Command: "gemini",
		Args:    []string{"--acp"},
		Env: map[string]string{
			// Else it relaunches itself as a child process.
			"GEMINI_CLI_NO_RELAUNCH": "true",
			// Else it skips every MCP server in an untrusted folder.
			"GEMINI_CLI_TRUST_WORKSPACE": "true",
		},
		// session/load in a new process worked in 1 of 4 runs (0.61.0).
		Resume:    "none",
		ModelWire: "Gemini streamGenerateContent",
		Package:   "@google/gemini-cli",
	},
	{
		Name:    "opencode",
		Command: "opencode",
		Args:    []string{"acp"},
		Env: map[string]string{
			"OPENCODE_DISABLE_AUTOUPDATE":   "1",
			"OPENCODE_DISABLE_MODELS_FETCH": "1",
		},
		AskEnv:    map[string]string{"OPENCODE_PERMISSION": opencodeAskPermission},
		Resume:    "load",
		ModelWire: "OpenAI Chat Completions",
		Package:   "opencode-ai",
	},
}

// Presets returns the built-in agent kinds, by name.
func Presets() []AgentPreset {
	out := make([]AgentPreset, len(presets))
	for i, p := range presets {
		p.Args = slices.Clone(p.Args)
		p.Env = maps.Clone(p.Env)
		p.AskEnv = maps.Clone(p.AskEnv)
		out[i] = p
	}
	return out
}

// preset returns the preset of name.
func preset(name string) (AgentPreset, bool) {
	i := slices.IndexFunc(presets, func(p AgentPreset) bool { return p.Name == name })
	if i < 0 {
		return AgentPreset{}, false
	}
	return presets[i], true
}

// AgentOption is one session configuration option of an agent
// (session/set_config_option).
type AgentOption struct {
	ID    string `json:"id"`
	Value any    `json:"value"` // string, bool, int64 or float64
}

// AgentConfig is one resolved agent kind: a preset, a preset with the
// user's overrides, or an agent the user defined. Its fields are what
// codexchild's ACP backend needs to start the agent and open sessions.
type AgentConfig struct {
	Name string `json:"name"`
	// Preset is the preset it is built on; "" for a user-defined agent.
	Preset string `json:"preset,omitempty"`
	// Command is the program: a name looked up in PATH, or an absolute
	// path.
	Command string `json:"command"`
	// Args are its arguments: the rest of an array command, then args.
	Args []string `json:"args"`
	// Env is added to serve's environment for the agent (a variable set in
	// both takes this value): the preset's variables the user did not set,
	// then the agent's env table.
	Env map[string]string `json:"env"`
	// Mode is set with session/set_mode on every new session: the user's
	// mode, else with approval ask the preset's AskMode; "" sets none.
	Mode string `json:"mode,omitempty"`
	// ConfigOptions are set with session/set_config_option, in this order
	// (by id).
	ConfigOptions []AgentOption `json:"config_options"`
	Resume        string        `json:"resume"`        // one of AgentResumes
	Approval      string        `json:"approval"`      // one of AgentApprovals
	MCPTransport  string        `json:"mcp_transport"` // one of AgentTransports
	// Host is the host the kind's agents run on (a name of
	// Config.Hosts, or LocalHost); "" leaves the instance's (see
	// Config.HostFor).
	Host string `json:"host,omitempty"`
	// Enabled is false when the user switched the agent off: agent_start
	// refuses it.
	Enabled bool `json:"enabled"`
	// ModelWire and Install are the preset's (ModelWire, Install()); ""
	// for a user-defined agent.
	ModelWire string `json:"model_wire,omitempty"`
	Install   string `json:"install,omitempty"`
	// Files are the configuration files with a section for this agent,
	// highest first; none for a preset the user did not configure.
	Files []string `json:"files,omitempty"`
	// Sources says where each value came from, by key: command, args,
	// mode, resume, approval, enabled, env.<VAR>, config_options.<id>.
	// The same sources are in Config.Sources as agents.<name>.<key>.
	Sources map[string]Source `json:"sources"`

	// launchArgs is how many of Args came with an array command.
	launchArgs int
}

// Configured reports whether a configuration file has a section for the
// agent: the user asked for it, so its absence is a fault, not a fact.
func (a AgentConfig) Configured() bool { return len(a.Files) > 0 }

// EnvList returns Env as KEY=VALUE entries sorted by key, the form of
// exec.Cmd.Env and of codexchild's ACP configuration.
func (a AgentConfig) EnvList() []string {
	out := make([]string, 0, len(a.Env))
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		out = append(out, k+"="+a.Env[k])
	}
	return out
}

// VersionCommand returns the command line that asks the agent's program for
// its version: the program, the arguments that came with an array command
// (such as npx's package), then --version.
func (a AgentConfig) VersionCommand() []string {
	return append(append([]string{a.Command}, a.Args[:a.launchArgs]...), "--version")
}

// CommandLine returns the program and its arguments.
func (a AgentConfig) CommandLine() []string {
	return append([]string{a.Command}, a.Args...)
}

// Agent returns the enabled agent kind name (a preset or a configured
// agent). It fails with an error wrapping ErrUnknownAgent for any other
// name (codex included: it is not an ACP agent) and ErrAgentDisabled for a
// disabled one.
func (c *Config) Agent(name string) (AgentConfig, error) {
	a, ok := c.Agents[name]
	if !ok {
		var names []string
		for _, n := range slices.Sorted(maps.Keys(c.Agents)) {
			if c.Agents[n].Enabled {
				names = append(names, n)
			}
		}
		if name == CodexAgent {
			return AgentConfig{}, fmt.Errorf("%w %q: codex is the built-in Codex backend, not an ACP agent", ErrUnknownAgent, name)
		}
		return AgentConfig{}, fmt.Errorf("%w %q: the agents are codex, %s (define others in [plugins.atm-agent-mcp.agents.<name>])",
			ErrUnknownAgent, name, strings.Join(names, ", "))
	}
	if !a.Enabled {
		return AgentConfig{}, fmt.Errorf("%w: %s is switched off by %s", ErrAgentDisabled, name, a.Sources["enabled"])
	}
	return a, nil
}
