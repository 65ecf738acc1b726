package agentmcp

import (
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/cli"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxy"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acp"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/acpbackend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshhost"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// hostOptions are the configured hosts as serve runs agents there
// ([plugins.atm-agent-mcp.hosts.<name>]): each reached with the user's
// ssh (its destination and ssh_args) through this program's guard, its
// agents started as this serve's instance (instanceTag: what a
// reconnect and serve's exit stop there), Codex as app-server with the
// host's codex_bin, and each enabled ACP agent kind with the host's
// command for it, its tool servers served over HTTP here. What runs
// there: the agents (and their shells, git, builds). What stays here: the
// team's mail and its tool servers, the registry, approvals, the view.
func hostOptions(cfg *config.Config, guard []string, logger *slog.Logger) map[string]proxy.Host {
	if len(cfg.Hosts) == 0 {
		return nil
	}
	instance := instanceTag(cfg)
	out := make(map[string]proxy.Host, len(cfg.Hosts))
	for _, name := range slices.Sorted(maps.Keys(cfg.Hosts)) {
		hc := cfg.Hosts[name]
		log := logger.With("host", name)
		h := proxy.Host{
			SSH:  sshhost.Config{Name: name, Dest: hc.SSH, SSHArgs: hc.SSHArgs, Instance: instance, Guard: guard, Logger: logger},
			Root: hc.Root,
			Codex: func(conn *sshhost.Host) (backend.Backend, error) {
				return codexchild.New(codexchild.Config{
					Bin: hc.CodexBin, Kind: codexchild.KindAppServer, Host: conn, Dir: hc.Root,
					Args: cfg.CodexArgs(), Env: []string{parentServeEnv(cfg)},
					Logger: log, DefaultTimeout: cfg.RequestTimeout, Guard: guard,
					HandshakeTimeout: min(cfg.HandshakeTimeout, cfg.RequestTimeout),
					ClientInfo:       codexchild.ClientInfo{Name: "atm-agent-mcp", Version: cli.Version()},
				})
			},
			Agents: map[string]func(*sshhost.Host) backend.Backend{},
		}
		for _, kind := range slices.Sorted(maps.Keys(cfg.Agents)) {
			a := cfg.Agents[kind]
			if !a.Enabled {
				continue
			}
			line := hc.AgentCommandLine(a)
			opts := make([]acp.ConfigOption, 0, len(a.ConfigOptions))
			for _, o := range a.ConfigOptions {
				opts = append(opts, acp.ConfigOption{ID: o.ID, Value: o.Value})
			}
			h.Agents[kind] = func(conn *sshhost.Host) backend.Backend {
				return acpbackend.New(acpbackend.Config{
					Name: kind, Command: line[0], Args: line[1:], Env: append(a.EnvList(), parentServeEnv(cfg)),
					Mode: a.Mode, ConfigOptions: opts, Resume: a.Resume, ToolTransport: acpbackend.ToolsHTTP, Guard: guard,
					Host: conn, Dir: hc.Root,
					InitTimeout: min(cfg.HandshakeTimeout, cfg.RequestTimeout), TurnTimeout: cfg.RequestTimeout,
					Logger: log.With("component", "agent"),
				})
			}
		}
		out[name] = h
	}
	return out
}

// notTag is what a tag on a host (sshhost.Tag) cannot hold.
var notTag = regexp.MustCompile(`[^A-Za-z0-9_@.+-]`)

// instanceTag is this serve's instance as the hosts know it: the
// registry's team and instance, and this machine's name
// (<team>+<instance>@<machine>), so that serves of two machines that use
// one host never stop each other's agents there.
func instanceTag(cfg *config.Config) string {
	team, instance := cfg.RegistryTeam()
	return tagOf(team, instance)
}

// tagOf is the tag of instance of team on this machine.
func tagOf(team, instance string) string {
	tag := notTag.ReplaceAllString(team, "_") + "+" + notTag.ReplaceAllString(instance, "_") + "@" + machineTag()
	if len(tag) > 128 {
		tag = tag[:128]
	}
	return tag
}

// machineTag is this machine's name as a tag holds it.
func machineTag() string {
	machine, err := os.Hostname()
	if err != nil || machine == "" {
		machine = "localhost"
	}
	return notTag.ReplaceAllString(machine, "_")
}

// staleInstance reports whether the agents a host keeps for tag were left
// by a serve of this machine and team that is gone: another instance of
// the team's registry whose claim no live process holds (a serve killed
// with SIGKILL; its registry says so as `sessions` does). Another
// machine's or another team's tag is never judged from here, nor this
// serve's own (its connection stops those).
func staleInstance(cfg *config.Config) func(tag string) bool {
	team, self := cfg.RegistryTeam()
	dir, err := registry.TeamDir(cfg.Home, team)
	if err != nil {
		return nil
	}
	return func(tag string) bool {
		if tag == tagOf(team, self) {
			return false
		}
		insts, err := dir.Scan()
		if err != nil {
			return false
		}
		for _, inst := range insts {
			if tagOf(team, inst.Identity) == tag {
				return !inst.Running
			}
		}
		return false // not an instance of this team's registry here
	}
}

// hostFor is the configured host of a new session of kind and role: the
// role's host, the kind's, the plugin's (config.HostFor), "" for here.
func hostFor(cfg *config.Config) func(kind, role string) string {
	return func(kind, role string) string {
		name, _ := cfg.HostFor(kind, role)
		return name
	}
}
