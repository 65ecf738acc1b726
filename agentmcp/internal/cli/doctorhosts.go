package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
)

// Bounds of a host's check: ssh's ConnectTimeout, and the whole wait for
// the connection (the key exchange and authentication come after the TCP
// connect).
const (
	hostConnectTimeout = 5 * time.Second
	hostUpTimeout      = 15 * time.Second
)

// hosts checks every configured host, one line each (host:<name>).
func (d *doctor) hosts(ctx context.Context) []check {
	var out []check
	for _, name := range slices.Sorted(maps.Keys(d.cfg.Hosts)) {
		out = append(out, d.host(ctx, d.cfg.Hosts[name]))
	}
	return out
}

// host checks one host: reachable over ssh without a prompt (BatchMode),
// then git, Codex and each enabled agent kind's version there. A program
// missing there fails the check only for what is configured to run there
// (Codex when the instance's host is this one, an agent kind whose host it
// is); git missing is a warning (an agent works there, but the git facts
// of its context, worktrees and reviews need it).
func (d *doctor) host(ctx context.Context, hc config.HostConfig) check {
	c := check{Name: "host:" + hc.Name}
	dest := "ssh " + strings.Join(append(append([]string(nil), hc.SSHArgs...), hc.SSH), " ")
	h, err := sshhost.New(sshhost.Config{
		Name: hc.Name, Dest: hc.SSH, SSHArgs: hc.SSHArgs,
		ConnectTimeout: hostConnectTimeout, MinBackoff: hostUpTimeout, MaxBackoff: hostUpTimeout,
	})
	if err != nil {
		c.Status, c.Detail = statusMissing, err.Error()
		return c
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Close(cctx)
	}()
	upCtx, cancel := context.WithTimeout(ctx, hostUpTimeout)
	err = h.Attempt(upCtx)
	cancel()
	if err != nil {
		c.Status = statusMissing
		c.Detail = fmt.Sprintf("not reachable without a prompt (%s): %s", dest, sshSaid(err))
		c.Fix = fmt.Sprintf("make `ssh -o BatchMode=yes %s true` work: a key in your ssh-agent or ~/.ssh (ssh reads it from your passwd entry, not $HOME; give another config with ssh_args = [\"-F\", ...]), and the host's key in known_hosts", strings.TrimPrefix(dest, "ssh "))
		return c
	}
	c.Status = statusOK
	var have, missing, problems []string
	if v, err := d.hostVersion(ctx, h, []string{"git", "--version"}); err != nil {
		c.Status = statusWarn
		problems = append(problems, "git: "+err.Error())
		c.Fix = "install git on " + hc.Name + ": the agents' git facts, worktrees and reviews run there"
	} else {
		have = append(have, "git "+v)
	}
	codexHost, _ := d.cfg.HostFor(config.CodexAgent, "")
	switch v, err := d.hostVersion(ctx, h, []string{hc.CodexBin, "--version"}); {
	case err == nil:
		have = append(have, "codex "+v)
	case codexHost == hc.Name:
		c.Status = statusMissing
		problems = append(problems, "codex ("+hc.CodexBin+"): "+err.Error())
		c.Fix = fmt.Sprintf("install Codex on %s (npm install -g @openai/codex), or set codex_bin in [plugins.atm-agent-mcp.hosts.%s]: Codex runs there (host from %s)", hc.Name, hc.Name, d.cfg.Sources["host"])
	default:
		missing = append(missing, "codex")
	}
	for _, kind := range slices.Sorted(maps.Keys(d.cfg.Agents)) {
		a := d.cfg.Agents[kind]
		if !a.Enabled {
			continue
		}
		argv := hc.AgentVersionCommand(a)
		on, src := d.cfg.HostFor(kind, "")
		switch v, err := d.hostVersion(ctx, h, argv); {
		case err == nil:
			have = append(have, kind+" "+v)
		case on == hc.Name:
			c.Status = statusMissing
			problems = append(problems, kind+" ("+argv[0]+"): "+err.Error())
			c.Fix = fmt.Sprintf("install %s on %s, or set agents.%s in [plugins.atm-agent-mcp.hosts.%s]: it runs there (host from %s)", argv[0], hc.Name, kind, hc.Name, src)
		case errors.Is(err, sshhost.ErrNoCommand):
			missing = append(missing, kind)
		default:
			missing = append(missing, kind+" ("+err.Error()+")")
		}
	}
	c.Detail = fmt.Sprintf("reachable (%s); %s", dest, strings.Join(have, ", "))
	if len(problems) > 0 {
		c.Detail += "; " + strings.Join(problems, "; ")
	}
	if len(missing) > 0 {
		c.Detail += "; not there: " + strings.Join(missing, ", ")
	}
	return c
}

// hostVersion runs argv on the host and finds a version in what it prints.
func (d *doctor) hostVersion(ctx context.Context, h *sshhost.Host, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, agentProbeTimeout)
	defer cancel()
	out, err := h.Run(ctx, "", argv)
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s did not answer within %s", strings.Join(argv, " "), agentProbeTimeout)
	case errors.Is(err, sshhost.ErrNoCommand):
		return "", fmt.Errorf("not found: %w", sshhost.ErrNoCommand)
	case err != nil:
		return "", errors.New(sshSaid(err))
	}
	for l := range strings.SplitSeq(string(out), "\n") {
		if m := versionWord.FindStringSubmatch(l); m != nil {
			return m[1], nil
		}
	}
	return "", errors.New("printed no version: " + firstLine(string(out)))
}

// sshSaid is an error of a host without the host's name (the check's line
// names it): what failed and what was said.
func sshSaid(err error) string {
	var he *sshhost.Error
	if !errors.As(err, &he) {
		return err.Error()
	}
	return strings.TrimPrefix(he.Error(), fmt.Sprintf("host %q: ", he.Host))
}
