package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
)

// The Claude Code plugin (agentmcp/claude-plugin/atm-agent-mcp) carries no
// binary: its launcher runs the atm-agent-mcp it finds, which may be older
// or newer than the plugin, whose skill and commands name the tools of
// their own version (a stale binary first on PATH answered "No such tool
// available"). So every binary knows the plugin version it was built with
// (Programs.PluginVersion, from the plugin.json compiled in), prints it
// with the hidden command plugin-version, and the launcher and this
// binary compare:
//
//   - the launcher runs the first binary built for its own version, else
//     the first it finds, after saying on stderr what to do; it passes its
//     version on as EnvPluginVersion;
//   - serve adds a configuration warning when EnvPluginVersion differs
//     from its own (agent_status and the first tool error show it);
//   - doctor's plugin check compares with EnvPluginVersion, else with the
//     installed plugin (installed_plugins.json).

// EnvPluginVersion is the version of the plugin whose launcher started
// this binary.
const EnvPluginVersion = "ATM_AGENT_MCP_PLUGIN_VERSION"

// pluginVersionCmd prints the plugin version this binary was built with.
type pluginVersionCmd struct{}

func (pluginVersionCmd) Run(env *runEnv) error {
	if env.progs.PluginVersion == "" {
		return errNotBuilt
	}
	_, err := fmt.Fprintln(env.stdout, env.progs.PluginVersion)
	return err
}

// pluginMismatch says what to do when the plugin (version plugin) starts a
// binary built with another plugin version (built); ok is false when they
// are the same, or either is unknown.
func pluginMismatch(built, plugin string) (msg string, ok bool) {
	built, plugin = strings.TrimSpace(built), strings.TrimSpace(plugin)
	if built == "" || plugin == "" || built == plugin {
		return "", false
	}
	if compareVersions(built, plugin) < 0 {
		return fmt.Sprintf("this atm-agent-mcp (%s) was built with plugin %s, older than the plugin (%s): "+
			"tools the plugin's skill and commands use may be missing (\"No such tool available\"); install the atm-agent-mcp of plugin %s "+
			"(from a clone: git pull && make install), then restart Claude Code or reconnect the server (/mcp)",
			Version(), built, plugin, plugin), true
	}
	return fmt.Sprintf("the plugin (%s) is older than this atm-agent-mcp (%s), which was built with plugin %s: update the plugin "+
		"(claude plugin marketplace update atm-agent-mcp, then claude plugin update atm-agent-mcp@atm-agent-mcp) and restart Claude Code",
		plugin, Version(), built), true
}

// pluginWarning is serve's configuration warning for a launcher of
// another plugin version, if any.
func pluginWarning(env *runEnv) (config.Warning, bool) {
	msg, ok := pluginMismatch(env.progs.PluginVersion, env.getenv(EnvPluginVersion))
	if !ok {
		return config.Warning{}, false
	}
	return config.Warning{File: "env " + EnvPluginVersion, Key: "plugin", Message: msg}, true
}

// compareVersions compares two dotted versions number by number ("0.10.0"
// is after "0.9.2"; a missing or non-numeric part counts as 0).
func compareVersions(a, b string) int {
	as, bs := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
