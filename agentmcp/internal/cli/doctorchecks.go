package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// probeTimeout bounds each run of the Codex binary.
const probeTimeout = 15 * time.Second

// Codex versions that matter to serve (measured; see docs/codex-wire.md).
// The supported floor and the tested range are codexchild's.
const (
	appServerMinor  = 154 // mcp-server was removed in 0.154.0: app-server from here
	providerNameMin = 169 // 0.169 refuses a model provider without name
)

// doctor runs the checks of `atm-agent-mcp doctor` for one resolved
// configuration. It reads files and runs the Codex binary; it creates and
// changes nothing (the identity check takes the claim for an instant only
// when a claim file already exists).
type doctor struct {
	cfg    *config.Config
	getenv func(string) string
	// pluginVersion is the plugin version this binary was built with
	// (Programs.PluginVersion).
	pluginVersion string

	codexPath    string // set by the codex check when found
	codexVersion string // "0.171.0"; "" when unknown
}

// run runs every check in order.
func (d *doctor) run(ctx context.Context) []check {
	out := []check{d.config(), d.team(), d.identity(), d.codex(ctx)}
	out = append(out, d.login(ctx), d.bubblewrap(), d.claudeCode(), d.claudeCache(time.Now()), d.plugin(ctx))
	return append(append(out, d.agents(ctx)...), d.hosts(ctx)...)
}

// config reports the files read and their warnings.
func (d *doctor) config() check {
	c := check{Name: "config", Status: statusOK}
	switch n := len(d.cfg.Files); n {
	case 0:
		c.Detail = "no configuration file: flags, environment and defaults"
	default:
		c.Detail = fmt.Sprintf("%d file(s) read: %s", n, strings.Join(d.cfg.Files, ", "))
	}
	if len(d.cfg.Warnings) > 0 {
		var ws []string
		for _, w := range d.cfg.Warnings {
			ws = append(ws, w.String())
		}
		c.Status = statusWarn
		c.Detail += "; " + strings.Join(ws, "; ")
		c.Fix = "correct or remove the sections and keys named (their settings are ignored now); `atm-agent-mcp config` shows every value and where it came from"
	}
	return c
}

// team checks the team's directory and config.json.
func (d *doctor) team() check {
	c := check{Name: "team"}
	if problem, missing := d.cfg.TeamProblem(); missing {
		c.Status, c.Detail = statusMissing, "team "+problem+" (team from "+d.cfg.Sources["team"].String()+")"
		team := d.cfg.Team
		if best := config.ClosestTeam(d.cfg.Home, team); best != "" {
			c.Fix = fmt.Sprintf("use the existing team: --team %s (or ATM_TEAM=%s, or default_team = %q under [core] in .atm.toml)", best, best, best)
		} else {
			dir := filepath.Join(config.TeamsDir(d.cfg.Home), team)
			c.Fix = fmt.Sprintf(`mkdir -p %s/inboxes && echo '{"name":"%s","members":[{"name":"team-lead","agentId":"team-lead@%s"}]}' > %s/config.json`,
				dir, team, team, dir)
		}
		return c
	}
	atm, err := atmclient.New(atmclient.Config{Home: d.cfg.Home})
	if err != nil {
		return check{Name: "team", Status: statusMissing, Detail: err.Error(), Fix: "set ATM_HOME or HOME"}
	}
	t, err := atm.TeamConfig(d.cfg.Team)
	if err != nil {
		return check{Name: "team", Status: statusMissing, Detail: err.Error(),
			Fix: "repair the team's config.json: a JSON object with name and members [{name, agentId}]"}
	}
	dir, _ := atm.TeamDir(d.cfg.Team)
	c.Status = statusOK
	c.Detail = fmt.Sprintf("%s: %s, %d member(s)", d.cfg.Team, dir, len(t.Members))
	if d.cfg.SessionTeam {
		c.Detail += " (the Claude Code session's team: serve joins it as " + d.cfg.Identity + ")"
	}
	return c
}

// identity checks that no other serve holds the instance identity. A
// registry that has no claim file for it has never seen it: nothing is
// created then.
func (d *doctor) identity() check {
	c := check{Name: "identity"}
	regTeam, inst := d.cfg.RegistryTeam()
	dir, err := registry.TeamDir(d.cfg.Home, regTeam)
	if err != nil {
		c.Status, c.Detail = statusMissing, err.Error()
		return c
	}
	lock := filepath.Join(dir.Path(), inst+".lock")
	if _, err := os.Stat(lock); errors.Is(err, fs.ErrNotExist) {
		c.Status, c.Detail = statusOK, fmt.Sprintf("%s is free (no serve has claimed it in %s)", inst, dir.Path())
		return c
	}
	claim, err := dir.Claim(inst, "")
	var conflict *registry.ConflictError
	switch {
	case errors.As(err, &conflict) && d.underClaudeCode() && ownSession(conflict.HolderPID):
		c.Status = statusOK
		c.Detail = fmt.Sprintf("%s is held by the serve of the Claude Code session that runs this check (pid %d)", inst, conflict.HolderPID)
	case errors.As(err, &conflict) && d.underClaudeCode() && d.cfg.IdentityDefaulted():
		c.Status = statusWarn
		c.Detail = fmt.Sprintf("%s is held by another serve (pid %d since %s): another Claude Code window? "+
			"This window's serve takes the next free identity (%s-2 or on) and says so", inst, conflict.HolderPID,
			conflict.Since.Local().Format(time.DateTime), inst)
		c.Fix = "to choose the name, start Claude Code with ATM_AGENT_MCP_IDENTITY=NAME claude"
	case errors.As(err, &conflict):
		c.Status = statusMissing
		c.Detail = fmt.Sprintf("%s is held by another serve (pid %d since %s): another Claude Code window?", inst, conflict.HolderPID,
			conflict.Since.Local().Format(time.DateTime))
		c.Fix = d.cfg.IdentityAdvice()
	case err != nil:
		c.Status, c.Detail = statusMissing, err.Error()
	default:
		_ = claim.Release()
		c.Status, c.Detail = statusOK, fmt.Sprintf("%s is free (%s)", inst, dir.Path())
	}
	return c
}

// codex finds the Codex binary, reads its version and says which protocol
// serve drives it with, by the rule serve's auto selection applies.
func (d *doctor) codex(ctx context.Context) check {
	c := check{Name: "codex"}
	installFix := "install Codex: npm install -g @openai/codex (then codex login), or point serve at it with --codex-bin PATH, ATM_AGENT_MCP_CODEX_BIN or codex_bin in [plugins.atm-agent-mcp]"
	path, err := exec.LookPath(d.cfg.CodexBin)
	if err != nil {
		c.Status, c.Fix = statusMissing, installFix
		if strings.ContainsRune(d.cfg.CodexBin, filepath.Separator) {
			c.Detail = fmt.Sprintf("%s (codex_bin from %s) is not an executable file", d.cfg.CodexBin, d.cfg.Sources["codex_bin"])
		} else {
			c.Detail = fmt.Sprintf("%q is not on PATH (PATH=%s)", d.cfg.CodexBin, d.getenv("PATH"))
		}
		return c
	}
	d.codexPath = path
	out, err := d.runCodex(ctx, "--version")
	if err != nil {
		c.Status, c.Detail = statusMissing, fmt.Sprintf("%s --version failed: %v", path, err)
		c.Fix = installFix
		return c
	}
	if f := strings.Fields(out); len(f) > 0 {
		d.codexVersion = f[len(f)-1]
	}
	minor, ok := codexMinor(d.codexVersion)
	if !ok {
		c.Status = statusWarn
		c.Detail = fmt.Sprintf("%s prints no version (%q); serve will try `mcp-server --help` to choose the protocol", path, strings.TrimSpace(out))
		c.Fix = "check that codex_bin is the Codex CLI"
		return c
	}
	kind, how := "app-server", "chosen by its version"
	if minor < appServerMinor {
		kind = "mcp-server"
	}
	support := codexchild.SupportOf(d.codexVersion)
	switch {
	case support == codexchild.CodexTooOld:
		c.Status, c.Detail = statusMissing, fmt.Sprintf("%s is Codex %s: too old, serve drives %s and later", path, d.codexVersion, codexchild.OldestCodex)
		c.Fix = "npm install -g @openai/codex@" + codexchild.TestedAppServerCodex + " (the newest version tested with serve)"
		return c
	case d.cfg.Backend == "mcp-server" && minor >= appServerMinor:
		c.Status = statusMissing
		c.Detail = fmt.Sprintf("%s is Codex %s, which has no mcp-server (removed in 0.%d.0), but backend = mcp-server (%s)", path, d.codexVersion, appServerMinor, d.cfg.Sources["backend"])
		c.Fix = "use backend = auto (or app-server)"
		return c
	case d.cfg.Backend != "auto":
		kind, how = d.cfg.Backend, "backend from "+d.cfg.Sources["backend"].String()
	}
	c.Status, c.Detail = statusOK, fmt.Sprintf("%s, Codex %s, driven as %s (%s)", path, d.codexVersion, kind, how)
	tested := fmt.Sprintf("%s to %s", codexchild.TestedMCPServerCodex, codexchild.TestedAppServerCodex)
	switch support {
	case codexchild.CodexOlderThanTested:
		c.Status = statusWarn
		c.Detail += fmt.Sprintf("; older than the versions tested (%s): serve still drives it (from %s), but no test runs it any more, so a fault of this version may go unnoticed", tested, codexchild.OldestCodex)
		c.Fix = "npm install -g @openai/codex@" + codexchild.TestedAppServerCodex + " (the newest version tested with serve)"
	case codexchild.CodexNewerThanTested:
		c.Status = statusWarn
		c.Detail += fmt.Sprintf("; newer than the versions tested (%s): serve drives it as it drives %s, but a change in its protocol since then is untested", tested, codexchild.TestedAppServerCodex)
		c.Fix = "if an agent misbehaves, go back to the newest version tested: npm install -g @openai/codex@" + codexchild.TestedAppServerCodex
	}
	return c
}

// login checks that Codex can reach its model: logged in to OpenAI (`codex
// login status` exits 0; Codex without that command: an auth.json in
// CODEX_HOME), or, for another model provider in Codex's config.toml, its
// API key variable set (and, from 0.169, the provider's name given).
func (d *doctor) login(ctx context.Context) check {
	c := check{Name: "login"}
	if d.codexPath == "" {
		c.Status, c.Detail = statusSkip, "no Codex to ask"
		return c
	}
	home := d.codexHome()
	prov, err := readProvider(filepath.Join(home, "config.toml"))
	if err != nil {
		c.Status, c.Detail = statusMissing, err.Error()
		c.Fix = "correct Codex's config.toml"
		return c
	}
	if prov.id != "" && prov.id != "openai" {
		return d.providerLogin(prov)
	}
	out, err := d.runCodex(ctx, "login", "status")
	var exit *exec.ExitError
	switch {
	case err == nil:
		c.Status, c.Detail = statusOK, firstLine(out)
		return c
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		c.Status, c.Detail = statusMissing, fmt.Sprintf("Codex is not logged in (codex login status: %s; CODEX_HOME %s)", firstLine(out), home)
		c.Fix = "codex login (with ChatGPT), or printenv OPENAI_API_KEY | codex login --with-api-key, in the environment serve runs in"
		return c
	}
	// A Codex without `login status`: its credentials file.
	auth := filepath.Join(home, "auth.json")
	if fi, serr := os.Stat(auth); serr == nil && fi.Mode().IsRegular() {
		c.Status, c.Detail = statusOK, fmt.Sprintf("%s exists (this Codex has no `login status`: %v)", auth, err)
		return c
	}
	c.Status = statusMissing
	c.Detail = fmt.Sprintf("no %s, and `codex login status` did not answer (%v)", auth, err)
	c.Fix = "codex login, in the environment serve runs in"
	return c
}

// providerLogin checks a model provider other than OpenAI.
func (d *doctor) providerLogin(p provider) check {
	c := check{Name: "login", Status: statusOK}
	c.Detail = fmt.Sprintf("model provider %s from %s: no OpenAI login needed", p.id, p.file)
	if p.envKey != "" {
		if v := d.getenv(p.envKey); strings.TrimSpace(v) == "" {
			c.Status = statusMissing
			c.Detail = fmt.Sprintf("model provider %s reads its API key from %s, which is not set", p.id, p.envKey)
			c.Fix = fmt.Sprintf("set %s in the environment serve runs in (the env of its MCP registration, or Claude Code's)", p.envKey)
			return c
		}
		c.Detail += fmt.Sprintf(", %s is set", p.envKey)
	}
	if minor, ok := codexMinor(d.codexVersion); ok && minor >= providerNameMin && p.declared && p.name == "" {
		c.Status = statusMissing
		c.Detail = fmt.Sprintf("Codex %s refuses [model_providers.%s] without a name (\"provider name must not be empty\")", d.codexVersion, p.id)
		c.Fix = fmt.Sprintf("add name = %q under [model_providers.%s] in %s", p.id, p.id, p.file)
	}
	return c
}

// bubblewrap checks for bwrap on Linux, which Codex's sandbox uses.
func (d *doctor) bubblewrap() check {
	c := check{Name: "bubblewrap"}
	if runtime.GOOS != "linux" {
		c.Status, c.Detail = statusSkip, "not needed on "+runtime.GOOS
		return c
	}
	if p, err := exec.LookPath("bwrap"); err == nil {
		c.Status, c.Detail = statusOK, p
		return c
	}
	c.Status = statusWarn
	c.Detail = "bwrap is not on PATH: Codex's Linux sandbox falls back to its bundled copy and logs an error at every start"
	c.Fix = "sudo apt install bubblewrap (or your distribution's bubblewrap package)"
	return c
}

// claudeCode reports Claude Code's session and agent team, when present.
func (d *doctor) claudeCode() check {
	c := check{Name: "claude-code", Status: statusOK}
	sid := strings.TrimSpace(d.getenv(config.EnvClaudeSessionID))
	teams := strings.TrimSpace(d.getenv("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"))
	teamsOn := teams != "" && teams != "0" && !strings.EqualFold(teams, "false")
	if sid == "" {
		if !teamsOn {
			c.Status = statusSkip
			c.Detail = "not run by Claude Code (no " + config.EnvClaudeSessionID + ")"
			return c
		}
		c.Detail = "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS is on: an interactive Claude Code started here has a team session-<id8>, which serve joins when no team is configured"
		return c
	}
	name := config.SessionTeamName(sid)
	dir := filepath.Join(config.TeamsDir(d.cfg.Home), name)
	_, err := os.Stat(dir)
	switch {
	case d.cfg.SessionTeam:
		c.Detail = fmt.Sprintf("session %s: serve joins its team %s as %s", sid, name, d.cfg.Identity)
	case err == nil:
		c.Detail = fmt.Sprintf("session %s has the team %s, but serve uses team %s (%s); configure no team to join the session's", sid, name, d.cfg.Team, d.cfg.Sources["team"])
	case !teamsOn:
		c.Detail = fmt.Sprintf("session %s without agent teams (CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS unset): serve uses team %s", sid, d.cfg.Team)
	default:
		c.Detail = fmt.Sprintf("session %s has no team directory %s (headless -p sessions have none): serve uses team %s", sid, dir, d.cfg.Team)
	}
	return c
}

// runCodex runs the Codex binary with args and returns its combined
// output without Codex's WARNING lines.
func (d *doctor) runCodex(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.codexPath, args...)
	cmd.WaitDelay = time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	var lines []string
	for l := range strings.SplitSeq(buf.String(), "\n") {
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "WARNING:") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n"), err
}

// codexHome is Codex's home: CODEX_HOME, else ~/.codex.
func (d *doctor) codexHome() string {
	if h := strings.TrimSpace(d.getenv("CODEX_HOME")); h != "" {
		return h
	}
	home := d.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".codex")
}

// provider is the model provider of Codex's config.toml.
type provider struct {
	file     string
	id       string // model_provider; "" is OpenAI
	declared bool   // [model_providers.<id>] exists
	name     string
	envKey   string
}

// readProvider reads the model provider from Codex's config.toml; a
// missing file is OpenAI.
func readProvider(path string) (provider, error) {
	p := provider{file: path}
	var doc struct {
		ModelProvider  string `toml:"model_provider"`
		ModelProviders map[string]struct {
			Name   string `toml:"name"`
			EnvKey string `toml:"env_key"`
		} `toml:"model_providers"`
	}
	if _, err := toml.DecodeFile(path, &doc); errors.Is(err, fs.ErrNotExist) {
		return p, nil
	} else if err != nil {
		return p, fmt.Errorf("the Codex configuration %s: %w", path, err)
	}
	p.id = doc.ModelProvider
	if mp, ok := doc.ModelProviders[p.id]; ok {
		p.declared, p.name, p.envKey = true, mp.Name, mp.EnvKey
	}
	return p, nil
}

// codexMinor returns the minor version of a 0.x Codex version; ok is false
// for anything else.
func codexMinor(v string) (int, bool) {
	parts := strings.Split(v, ".")
	if len(parts) < 2 || parts[0] != "0" {
		return 0, false
	}
	n, err := strconv.Atoi(parts[1])
	return n, err == nil
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// underClaudeCode reports whether doctor runs inside a Claude Code session
// (its Bash tool or a command), which sets CLAUDECODE=1 and
// CLAUDE_CODE_SESSION_ID for what it starts.
func (d *doctor) underClaudeCode() bool {
	return d.getenv("CLAUDECODE") == "1" || strings.TrimSpace(d.getenv(config.EnvClaudeSessionID)) != ""
}

// ownSession reports whether pid is a child of one of this process's
// ancestors: run inside Claude Code, the serve that the same session
// started, which holds the identity by right.
func ownSession(pid int) bool {
	parent := parentPID(pid)
	if pid <= 0 || parent <= 1 {
		return false
	}
	for p, n := os.Getppid(), 0; p > 1 && n < 16; p, n = parentPID(p), n+1 {
		if p == parent {
			return true
		}
	}
	return false
}

// parentPID returns the parent of pid, or 0 when it cannot be read: from
// /proc on Linux, else from ps.
func parentPID(pid int) int {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) >= 2 {
				n, _ := strconv.Atoi(f[1])
				return n
			}
		}
		return 0
	}
	out, err := exec.Command("ps", "-o", "ppid=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}
