package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
)

// Check results.
const (
	statusOK      = "ok"      // works
	statusWarn    = "warn"    // works, but not as the user probably meant
	statusMissing = "missing" // serve cannot do its work until it is fixed
	statusSkip    = "skip"    // does not apply here
)

// doctorTimeout bounds the whole doctor run (each Codex probe has its own,
// shorter bound).
const doctorTimeout = time.Minute

// check is one line of the doctor's report.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Fix says how to repair a check that is not ok.
	Fix string `json:"fix,omitempty"`
}

type doctorCmd struct {
	locateFlags   `embed:""`
	identityFlags `embed:""`
	codexFlags    `embed:""`
	logFlags      `embed:""`
	mailFlags     `embed:""`
	JSON          bool `name:"json" help:"Print JSON: {ok, team, identity, checks: [{name, status, detail, fix}]}."`
	ExitZero      bool `name:"exit-zero" help:"Exit 0 even when something is missing (for a report that another program reads, such as the plugin's /atm-agent-mcp:doctor command)."`
}

// Help is shown by "atm-agent-mcp doctor --help".
func (doctorCmd) Help() string {
	return `Checks what "serve" needs, with the same flags, environment and files, and says how to fix what is missing, one line per check:

  config       the configuration files parse, with no misspelt section or unknown key
  team         the team's directory and config.json exist ("did you mean" another team)
  identity     no other serve (another Claude Code window) holds this serve's identity
  codex        Codex is found, its version, and the protocol serve drives it with
  login        Codex is logged in, or its model provider's API key variable is set
  bubblewrap   bwrap is on PATH (Linux), for Codex's sandbox
  claude-code  under Claude Code: its session and agent team, and which team serve joins
  claude-cache Claude Code has not cached a failure of the plugin's server (it would start sessions without it for 15 minutes)
  plugin       the Claude Code plugin and this binary are of the same version, and so is the atm-agent-mcp on PATH
  agent:NAME   each agent kind (claude, gemini, opencode, [plugins.atm-agent-mcp.agents.NAME]): its program found, and its version; a missing one fails only when configured
  host:NAME    each host of [plugins.atm-agent-mcp.hosts.NAME]: reachable over ssh without a prompt, and the versions of git, Codex and each agent kind there; a missing program fails only for what is configured to run there

Exits 1 when something serve needs is missing (0 with --exit-zero); warnings alone exit 0. Nothing is created or changed. Run from Claude Code's Bash tool, the serve of that same session holding the identity is fine.`
}

func (c *doctorCmd) Run(env *runEnv) error {
	var f config.Flags
	c.locateFlags.apply(&f)
	c.identityFlags.apply(&f)
	c.codexFlags.apply(&f)
	c.logFlags.apply(&f)
	c.mailFlags.apply(&f)
	ctx, cancel := context.WithTimeout(context.Background(), doctorTimeout)
	defer cancel()
	cfg, err := env.load(f, true)
	var checks []check
	if err != nil {
		checks = []check{{Name: "config", Status: statusMissing, Detail: oneLine(err),
			Fix: "correct the file, key, variable or flag named above; serve refuses to start until then"}}
	} else {
		d := &doctor{cfg: cfg, getenv: env.getenv, pluginVersion: env.progs.PluginVersion}
		checks = d.run(ctx)
	}
	if err := printChecks(env, cfg, checks, c.JSON); err != nil {
		return err
	}
	var failed []string
	for _, ch := range checks {
		if ch.Status == statusMissing {
			failed = append(failed, ch.Name)
		}
	}
	if len(failed) > 0 && !c.ExitZero {
		return fmt.Errorf("%d of %d checks failed (%s): serve cannot work until they are fixed", len(failed), len(checks), strings.Join(failed, ", "))
	}
	return nil
}

// printChecks writes the report: a table with each fix under its check,
// or JSON.
func printChecks(env *runEnv, cfg *config.Config, checks []check, asJSON bool) error {
	ok := true
	for _, ch := range checks {
		ok = ok && ch.Status != statusMissing
	}
	if asJSON {
		out := struct {
			OK       bool    `json:"ok"`
			Team     string  `json:"team,omitempty"`
			Identity string  `json:"identity,omitempty"`
			Checks   []check `json:"checks"`
		}{OK: ok, Checks: checks}
		if cfg != nil {
			out.Team, out.Identity = cfg.Team, cfg.Identity
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if cfg != nil {
		fmt.Fprintf(env.stdout, "What serve needs, for team %q and identity %q:\n", cfg.Team, cfg.Identity)
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	for _, ch := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Status, ch.Name, ch.Detail)
		if ch.Fix != "" && ch.Status != statusOK {
			fmt.Fprintf(tw, "\t\tfix: %s\n", ch.Fix)
		}
	}
	return tw.Flush()
}

// oneLine joins the lines of a (possibly joined) error with "; ".
func oneLine(err error) string {
	var parts []string
	for _, e := range flatten(err) {
		parts = append(parts, strings.ReplaceAll(e.Error(), "\n", "; "))
	}
	return strings.Join(parts, "; ")
}
