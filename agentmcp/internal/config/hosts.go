package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Hosts: machines reached over ssh where agents run, each a section
// [plugins.atm-agent-mcp.hosts.<name>]. `host` (the plugin's own key, a
// role's, an agent kind's) picks one by name; LocalHost is this machine.

// LocalHost is the reserved host name of this machine: `host = "local"`
// runs an agent here whatever a lower setting says. No host section may
// take it.
const LocalHost = "local"

// hostKeys are the keys of a host section; any other key draws a warning.
var hostKeys = []string{"ssh", "ssh_args", "root", "codex_bin", "agents"}

// hostName is the form of a host's name: it names the host in errors, in
// the log and in the view, and its control socket.
var hostName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$`)

// hostPrefix is the key prefix of host values in Config.Sources.
const hostPrefix = "hosts."

// HostConfig is one resolved host: how ssh reaches it and what runs
// there. Commands and paths in it are the host's: nothing is looked up or
// made absolute on this machine.
type HostConfig struct {
	Name string `json:"name"`
	// SSH is the destination as ssh takes it (an alias of the user's
	// ~/.ssh/config, user@host, ssh://host:port).
	SSH string `json:"ssh"`
	// SSHArgs are more arguments of ssh, before the destination
	// (["-F", "/path/to/config"]: ssh reads ~/.ssh from the user's passwd
	// entry, not from $HOME).
	SSHArgs []string `json:"ssh_args"`
	// Root is the root of the working directories on the host, an
	// absolute path there; "" means the home directory there.
	Root string `json:"root,omitempty"`
	// CodexBin is the Codex program on the host: codex_bin's name (a path
	// here makes no sense there) unless the host sets its own.
	CodexBin string `json:"codex_bin"`
	// Agents are the command of every agent kind on the host, by kind: the
	// host's agents table, else the kind's own command (a path reduced to
	// its name, looked up in the PATH there) with the arguments that come
	// with it.
	Agents map[string]HostCommand `json:"agents"`
	// Files are the configuration files with a section for this host,
	// highest first.
	Files []string `json:"files,omitempty"`
	// Sources says where each value came from, by key: ssh, ssh_args,
	// root, codex_bin, agents.<kind>. The same sources are in
	// Config.Sources as hosts.<name>.<key>.
	Sources map[string]Source `json:"sources"`
}

// HostCommand is an agent kind's program on a host and the arguments that
// come with it (an array command's); the kind's own args follow them.
type HostCommand struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// AgentCommandLine returns the command line of agent kind a on the host:
// the host's command for it, then the kind's args.
func (h HostConfig) AgentCommandLine(a AgentConfig) []string {
	hc := h.Agents[a.Name]
	return append(append([]string{hc.Command}, hc.Args...), a.Args[a.launchArgs:]...)
}

// AgentVersionCommand returns the command line that asks agent kind a's
// program on the host for its version.
func (h HostConfig) AgentVersionCommand(a AgentConfig) []string {
	hc := h.Agents[a.Name]
	return append(append([]string{hc.Command}, hc.Args...), "--version")
}

// HostFor returns the name of the host where an agent of kind (CodexAgent
// or an ACP agent kind) started with role ("": the instance's Role) runs,
// "" for this machine, and where that came from. The role's host wins
// over the kind's, which wins over the plugin's host; a host given by
// ATM_AGENT_MCP_HOST wins over both, as explicit values win over role
// presets. "local" is this machine.
func (c *Config) HostFor(kind, role string) (string, Source) {
	if role == "" {
		role = c.Role
	}
	name, src := c.Host, c.Sources["host"]
	if !src.Explicit() {
		if a, ok := c.Agents[kind]; ok && a.Host != "" {
			name, src = a.Host, a.Sources["host"]
		}
		if r, ok := c.Roles[role]; ok && r.Host != "" {
			name, src = r.Host, c.Sources["roles."+role+".host"]
		}
	}
	if name == LocalHost {
		name = ""
	}
	return name, src
}

// hostTable is [plugins.atm-agent-mcp.hosts].
var hostTable = namedTable{table: "hosts", keys: hostKeys, refuse: func(name string) string {
	switch {
	case name == LocalHost:
		return `a name other than local: "local" is this machine`
	case !hostName.MatchString(name):
		return "a host named with letters, digits, '.', '_' or '-' (at most 32, not starting with '.' or '-')"
	}
	return ""
}}

// hosts resolves every section of [plugins.atm-agent-mcp.hosts], each
// field taking the highest file that sets it and the agents table merging
// entry by entry. It needs the agent kinds and codex_bin resolved.
func (r *resolver) hosts(cfg *Config) map[string]HostConfig {
	files := r.sections(hostTable)
	out := make(map[string]HostConfig, len(files))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		out[name] = r.host(cfg, name, files[name])
	}
	return out
}

// host resolves one host.
func (r *resolver) host(cfg *Config, name string, files []string) HostConfig {
	h := HostConfig{Name: name, Files: files, SSHArgs: []string{}, Agents: map[string]HostCommand{}, Sources: map[string]Source{}}
	sec := section{r: r, t: hostTable, name: name, sources: h.Sources}
	set, get := sec.set, sec.get
	if v, src, ok := get(destDec, "ssh"); ok {
		h.SSH = v.(string)
		set("ssh", src)
	} else if _, _, found := r.find(sec.at("ssh")); !found {
		sec.missing(files, "ssh", `the host's ssh destination: an alias of ~/.ssh/config ("box"), user@host or ssh://host:port`)
	}
	set("ssh_args", Source{Kind: SourceDefault})
	if v, src, ok := get(stringsDec, "ssh_args"); ok {
		h.SSHArgs = v.([]string)
		set("ssh_args", src)
	}
	set("root", Source{Kind: SourceDefault, Detail: "the home directory on the host"})
	if v, src, ok := get(remotePathDec, "root"); ok {
		h.Root = v.(string)
		set("root", src)
	}
	h.CodexBin = remoteName(cfg.CodexBin)
	set("codex_bin", Source{Kind: SourceDefault, Detail: "codex_bin's name on the host's PATH"})
	if v, src, ok := get(remoteProgramDec, "codex_bin"); ok {
		h.CodexBin = v.([]string)[0]
		set("codex_bin", src)
	}
	hostAgents(cfg, &h, sec)
	return h
}

// hostAgents resolves the host's agents table: the kinds it names, then
// every other kind by its own command.
func hostAgents(cfg *Config, h *HostConfig, sec section) {
	kinds := slices.Sorted(maps.Keys(cfg.Agents))
	named := sec.subkeys("agents", `a table of agent kind = "command on the host"`, func(kind string) string {
		switch _, known := cfg.Agents[kind]; {
		case kind == CodexAgent:
			return "an ACP agent kind: Codex's program on the host is the host's codex_bin"
		case !known:
			return "an agent kind: one of " + strings.Join(kinds, ", ") + suggest(kind, kinds)
		}
		return ""
	})
	for _, kind := range kinds {
		if slices.Contains(named, kind) {
			if v, src, ok := sec.get(remoteProgramDec, "agents", kind); ok {
				cmd := v.([]string)
				h.Agents[kind] = HostCommand{Command: cmd[0], Args: cmd[1:]}
				sec.set("agents."+kind, src)
			}
			continue
		}
		a := cfg.Agents[kind]
		if a.Command == "" {
			continue // a misconfigured kind: its error is reported
		}
		h.Agents[kind] = HostCommand{Command: remoteName(a.Command), Args: slices.Clone(a.Args[:a.launchArgs])}
		sec.set("agents."+kind, Source{Kind: SourceDefault, Detail: "the agent's command, by name, on the host's PATH"})
	}
}

// remoteName is a local program as the host has it: its name, looked up
// in the PATH there.
func remoteName(prog string) string {
	if strings.ContainsRune(prog, '/') || strings.ContainsRune(prog, filepath.Separator) {
		return filepath.Base(prog)
	}
	return prog
}

// destDec decodes an ssh destination: not empty, no blank, not an option.
var destDec = decoder{
	expected: `an ssh destination: an alias of ~/.ssh/config ("box"), user@host or ssh://host:port`,
	decode: func(v any, _ Source) (any, bool) {
		s, ok := v.(string)
		return s, ok && s != "" && !strings.HasPrefix(s, "-") && !strings.ContainsAny(s, " \t\r\n\x00")
	},
}

// remotePathDec decodes a path on a host: absolute there, kept as written.
var remotePathDec = decoder{
	expected: "an absolute path on the host",
	decode: func(v any, _ Source) (any, bool) {
		s, ok := v.(string)
		return s, ok && strings.HasPrefix(s, "/") && !strings.ContainsAny(s, "\x00\n")
	},
}

// remoteProgramDec decodes a command on a host: a program (a name looked
// up in the PATH there, or a path there, kept as written), or an array of
// the program and its first arguments.
var remoteProgramDec = decoder{
	expected: `a program on the host: a name or path there, or an array of the program and its first arguments (["npx", "-y", "package"])`,
	decode: func(v any, src Source) (any, bool) {
		cmd, ok := programLine(v, src)
		if !ok || strings.ContainsAny(cmd[0], " \t=\x00") {
			return nil, false
		}
		return cmd, true
	},
}

// checkHostRefs checks that every host named by `host` (the plugin's, a
// role's, an agent kind's) is defined, or local.
func (r *resolver) checkHostRefs(cfg *Config) {
	defined := slices.Sorted(maps.Keys(cfg.Hosts))
	check := func(key, name string, src Source) {
		if name == "" || name == LocalHost {
			return
		}
		if _, ok := cfg.Hosts[name]; ok {
			return
		}
		exp := `"local" or a host defined in [plugins.atm-agent-mcp.hosts.<name>] (none are defined)`
		if len(defined) > 0 {
			exp = `"local" or a defined host: ` + strings.Join(defined, ", ") + suggest(name, defined)
		}
		r.errs = append(r.errs, &Error{Key: key, Source: src, Value: fmt.Sprintf("%q", name), Expected: exp})
	}
	check("host", cfg.Host, cfg.Sources["host"])
	for _, name := range slices.Sorted(maps.Keys(cfg.Roles)) {
		check("roles."+name+".host", cfg.Roles[name].Host, cfg.Sources["roles."+name+".host"])
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
		a := cfg.Agents[name]
		check(agentPrefix+name+".host", a.Host, a.Sources["host"])
	}
}

// hostEntries are the hosts' values, host by host: ssh, ssh_args, root,
// codex_bin, then agents.<kind> (a string, or a list with arguments).
func (c *Config) hostEntries() []Entry {
	var es []Entry
	for _, name := range slices.Sorted(maps.Keys(c.Hosts)) {
		h := c.Hosts[name]
		add := func(k string, v any) {
			es = append(es, Entry{Key: hostPrefix + name + "." + k, Value: v, Source: h.Sources[k]})
		}
		add("ssh", h.SSH)
		add("ssh_args", h.SSHArgs)
		var root any
		if h.Root != "" {
			root = h.Root
		}
		add("root", root)
		add("codex_bin", h.CodexBin)
		for _, kind := range slices.Sorted(maps.Keys(h.Agents)) {
			hc := h.Agents[kind]
			var cmd any = hc.Command
			if len(hc.Args) > 0 {
				cmd = append([]string{hc.Command}, hc.Args...)
			}
			add("agents."+kind, cmd)
		}
	}
	return es
}
