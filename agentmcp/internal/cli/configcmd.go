package cli

import (
	"encoding/json"
	"fmt"
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
	JSON          bool `name:"json" help:"Print JSON: {values, sources, files, warnings}."`
}

// Help is shown by "atm-agent-mcp config --help".
func (configCmd) Help() string {
	return `Takes the same flags as serve, so you can see what "serve" would run with. Each value's source is one of: flag, env (the variable), file (the file and key), claude-code session (the team of the Claude Code session that runs it, when no team is configured), default. Unknown keys in [plugins.atm-agent-mcp], misspelt sections and [core] keys, and a team that does not exist are reported as warnings on stderr (with the closest name: "did you mean"); a bad value or a malformed file is an error. "atm-agent-mcp doctor" checks the rest of what serve needs.`
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
			Values   map[string]any           `json:"values"`
			Sources  map[string]config.Source `json:"sources"`
			Files    []string                 `json:"files"`
			Warnings []config.Warning         `json:"warnings"`
			Session  config.ThreadSettings    `json:"session_defaults"`
			Args     []string                 `json:"codex_args"`
		}{map[string]any{}, map[string]config.Source{}, cfg.Files, cfg.Warnings, thread, codexArgs}
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
	_, err = fmt.Fprintf(env.stdout, "Codex command: %s\n", strings.Join(append([]string{cfg.CodexBin, sub}, codexArgs...), " "))
	return err
}

// showValue renders an entry value; nil is "(none)".
func showValue(v any) string {
	if v == nil {
		return "(none)"
	}
	return fmt.Sprint(v)
}
