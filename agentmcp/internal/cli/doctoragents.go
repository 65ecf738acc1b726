package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
)

// agentProbeTimeout bounds each agent's --version: an agent that does not
// know the flag may start its protocol instead (it ends at the end of its
// stdin, which is empty) or hang.
const agentProbeTimeout = 5 * time.Second

// versionWord finds a version in an agent's --version output.
var versionWord = regexp.MustCompile(`\bv?(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?)\b`)

// agents checks every agent kind, one line each (agent:<name>): whether its
// program is found and, when its --version answers in time, its version.
// A kind that runs on another host is checked there (host:<name>).
// A preset the user did not configure and that is not installed is only a
// fact (skip, with the install command); an agent the user configured and
// whose program is missing is missing.
func (d *doctor) agents(ctx context.Context) []check {
	var out []check
	for _, name := range slices.Sorted(maps.Keys(d.cfg.Agents)) {
		out = append(out, d.agent(ctx, d.cfg.Agents[name]))
	}
	return out
}

// agent checks one agent kind.
func (d *doctor) agent(ctx context.Context, a config.AgentConfig) check {
	c := check{Name: "agent:" + a.Name}
	if !a.Enabled {
		c.Status, c.Detail = statusSkip, "disabled by "+a.Sources["enabled"].String()
		return c
	}
	if on, src := d.cfg.HostFor(a.Name, ""); on != "" {
		c.Status, c.Detail = statusSkip, fmt.Sprintf("runs on host %s (host from %s): checked by host:%s", on, src, on)
		return c
	}
	kind := "preset " + a.Preset
	if a.Preset == "" {
		kind = "user-defined"
	}
	path, err := exec.LookPath(a.Command)
	if err != nil {
		var where string
		if strings.ContainsRune(a.Command, filepath.Separator) {
			where = fmt.Sprintf("%s (command from %s) is not an executable file", a.Command, a.Sources["command"])
		} else {
			where = fmt.Sprintf("%q is not on PATH", a.Command)
		}
		fix := fmt.Sprintf("install %s, or correct command in [plugins.atm-agent-mcp.agents.%s]", a.Command, a.Name)
		if a.Install != "" {
			fix = fmt.Sprintf("%s (or set command in [plugins.atm-agent-mcp.agents.%s])", a.Install, a.Name)
		}
		c.Fix = fix
		if !a.Configured() {
			c.Status, c.Detail = statusSkip, fmt.Sprintf("not installed: %s (%s; agent_start cannot run %s)", where, kind, a.Name)
			return c
		}
		c.Status = statusMissing
		c.Detail = fmt.Sprintf("%s, but %s is configured in %s", where, a.Name, strings.Join(a.Files, ", "))
		return c
	}
	c.Status = statusOK
	version, err := d.agentVersion(ctx, a, path)
	switch {
	case err != nil:
		c.Detail = fmt.Sprintf("%s (%s; no version: %v)", path, kind, err)
	default:
		c.Detail = fmt.Sprintf("%s, version %s (%s)", path, version, kind)
	}
	return c
}

// agentVersion runs the agent's VersionCommand (with the agent's
// environment, stdin empty) and finds a version in what it prints.
func (d *doctor) agentVersion(ctx context.Context, a config.AgentConfig, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, agentProbeTimeout)
	defer cancel()
	argv := a.VersionCommand()
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Env = append(os.Environ(), a.EnvList()...)
	cmd.WaitDelay = time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s did not answer within %s", strings.Join(argv[1:], " "), agentProbeTimeout)
	}
	if err != nil {
		if out := firstLine(buf.String()); out != "" {
			err = fmt.Errorf("%w: %s", err, out)
		}
		return "", fmt.Errorf("%s: %w", strings.Join(argv[1:], " "), err)
	}
	for l := range strings.SplitSeq(buf.String(), "\n") {
		if m := versionWord.FindStringSubmatch(l); m != nil {
			return m[1], nil
		}
	}
	return "", errors.New(strings.Join(argv[1:], " ") + " printed no version: " + firstLine(buf.String()))
}
