package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
)

type configCmd struct {
	locateFlags   `embed:""`
	identityFlags `embed:""`
	codexFlags    `embed:""`
	logFlags      `embed:""`
	mailFlags     `embed:""`
	JSON          bool `name:"json" help:"Print JSON: {values, sources, files, warnings, session_defaults, codex_args, agents, hosts}."`
}

// Help is shown by "atm-agent-mcp config --help".
func (configCmd) Help() string {
	return `Takes the same flags as serve, so you can see what "serve" would run with. Each value's source is one of: flag, env (the variable), file (the file and key), claude-code session (the team of the Claude Code session that runs it, when no team is configured), default. Unknown keys in [plugins.atm-agent-mcp], misspelt sections and [core] keys, and a team that does not exist are reported as warnings on stderr (with the closest name: "did you mean"); a bad value or a malformed file is an error. The agent kinds (the presets claude, gemini and opencode, and those of [plugins.atm-agent-mcp.agents.<name>]) are listed as agents.<name>.<key>, a preset's values with the source "preset <name>"; the hosts agents may run on over ssh ([plugins.atm-agent-mcp.hosts.<name>]) as hosts.<name>.<key>. "atm-agent-mcp doctor" checks the rest of what serve needs, and which agents are installed.`
}

func (c *configCmd) Run(env *runEnv) error {
	var f config.Flags
	c.locateFlags.apply(&f)
	c.identityFlags.apply(&f)
	c.codexFlags.apply(&f)
	c.logFlags.apply(&f)
	c.mailFlags.apply(&f)
	cfg, err := env.load(f, true)
	if err != nil {
		return err
	}
	if w, ok := cfg.TeamWarning(); ok {
		cfg.Warnings = append(cfg.Warnings, w)
	}
	env.warn(cfg)
	entries := cfg.Entries()
	thread, err := cfg.ThreadDefaults("")
	if err != nil {
		return err
	}
	codexArgs := cfg.CodexArgs()
	if codexArgs == nil {
		codexArgs = []string{}
	}
	if c.JSON {
		out := struct {
			Values   map[string]any                `json:"values"`
			Sources  map[string]config.Source      `json:"sources"`
			Files    []string                      `json:"files"`
			Warnings []config.Warning              `json:"warnings"`
			Session  config.ThreadSettings         `json:"session_defaults"`
			Args     []string                      `json:"codex_args"`
			Agents   map[string]config.AgentConfig `json:"agents"`
			Hosts    map[string]config.HostConfig  `json:"hosts"`
		}{map[string]any{}, map[string]config.Source{}, cfg.Files, cfg.Warnings, thread, codexArgs, cfg.Agents, cfg.Hosts}
		if out.Files == nil {
			out.Files = []string{}
		}
		if out.Warnings == nil {
			out.Warnings = []config.Warning{}
		}
		for _, e := range entries {
			out.Values[e.Key] = e.Value
			out.Sources[e.Key] = e.Source
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintln(env.stdout, "Configuration files read (highest first):")
	if len(cfg.Files) == 0 {
		fmt.Fprintln(env.stdout, "  (none)")
	}
	for _, p := range cfg.Files {
		fmt.Fprintf(env.stdout, "  %s\n", p)
	}
	fmt.Fprintln(env.stdout)
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, showValue(e.Value), e.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	role := thread.Role
	if role == "" {
		role = "no role"
	}
	model := thread.Model
	if model == "" {
		model = "(Codex default)"
	}
	effort := thread.ReasoningEffort
	if effort == "" {
		effort = "(Codex default)"
	}
	fmt.Fprintf(env.stdout, "\nNew sessions (%s): model %s, reasoning effort %s, sandbox %s, approval policy %s\n",
		role, model, effort, thread.Sandbox, thread.ApprovalPolicy)
	sub := cfg.Backend
	if sub == "auto" {
		sub = "{mcp-server|app-server}"
	}
	if _, err := fmt.Fprintf(env.stdout, "Codex command: %s\n", strings.Join(append([]string{cfg.CodexBin, sub}, codexArgs...), " ")); err != nil {
		return err
	}
	return printAgents(env, cfg)
}

// printAgents writes one line per agent kind: its command line and how its
// sessions run, or that it is switched off.
func printAgents(env *runEnv, cfg *config.Config) error {
	for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
		a := cfg.Agents[name]
		if !a.Enabled {
			fmt.Fprintf(env.stdout, "Agent %s: disabled (%s)\n", name, a.Sources["enabled"])
			continue
		}
		mode := a.Mode
		if mode == "" {
			mode = "(the agent's own)"
		}
		fmt.Fprintf(env.stdout, "Agent %s: %s (mode %s, approval %s, resume %s)\n", name, shellJoin(a.CommandLine()), mode, a.Approval, a.Resume)
	}
	return nil
}

// shellJoin renders a command line, quoting the words that need it.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`;&|<>*?()[]{}#~") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		out[i] = w
	}
	return strings.Join(out, " ")
}

// showValue renders an entry value; nil and an empty list are "(none)".
func showValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "(none)"
	case []string:
		if len(v) == 0 {
			return "(none)"
		}
		return shellJoin(v)
	}
	return fmt.Sprint(v)
}
