//go:build unix

package testscripts

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// How the tests learn what the real Claude Code made of our MCP server.
//
// Claude Code 2.1.332 connects MCP servers in the background ("[MCP] ...
// running fully async (nonblocking)"). In -p it prints its one init line
// before the first model request, and never again; it waits for a server
// given with --mcp-config (measured: one that took 14 s to connect was
// "connected" in init, and the turn waited for it), but for a plugin's
// server only about 2 s (one that took 2.6 s was "pending"). So for a
// plugin, init's "status" is a snapshot. ToolSearch waits for a pending
// server ("selected mcp_tool after MCP refresh"), so the model's tool
// calls work either way; a short session that ends first abandons the
// connection. What Claude Code did is in its debug log (--debug-file) and
// in its MCP logs (one file per session under
// ~/.cache/claude-cli-nodejs/<project>/mcp-logs-<server>/), and what the
// model was offered is in the requests the model mock gets. The tests read
// those, and a model mock that needs the connection settled waits for
// its verdict before it answers, as a session someone types into
// outlasts it.

// pluginServer is how Claude Code names our plugin's server.
const pluginServer = "plugin:atm-agent-mcp:codex"

// ourServer is how Claude Code's debug log names our plugin's server.
const ourServer = `MCP server "` + pluginServer + `": `

// settleLimit bounds how long a session's model waits for Claude Code's
// verdict on our server: beyond Claude Code's own connection timeout
// (30 s), within claudeTimeout.
const settleLimit = 60 * time.Second

// verdictWords are what Claude Code logs when a connection of a server
// ends, one way or the other: connected, failed, timed out.
var verdictWords = []string{"Successfully connected", "Connection failed", "Connection timeout triggered"}

// serverVerdicts returns the lines of Claude Code's debug log that end a
// connection of our plugin's server.
func serverVerdicts(debugLog string) []string { return mcpVerdicts(debugLog, pluginServer) }

// mcpVerdicts returns the lines of Claude Code's debug log that end a
// connection of the MCP server named server.
func mcpVerdicts(debugLog, server string) []string {
	prefix := `[DEBUG] MCP server "` + server + `": `
	var out []string
	for _, line := range grepLines(debugLog, prefix) {
		for _, v := range verdictWords {
			if strings.Contains(line, prefix+v) {
				out = append(out, line)
			}
		}
	}
	return out
}

// awaitVerdict waits, at most settleLimit, until Claude Code's debug log
// has a verdict on the MCP server named server, and returns the first
// ("" if none came).
func awaitVerdict(debugLog, server string) string {
	for deadline := time.Now().Add(settleLimit); ; time.Sleep(20 * time.Millisecond) {
		if v := mcpVerdicts(debugLog, server); len(v) > 0 {
			return v[0]
		}
		if time.Now().After(deadline) {
			return ""
		}
	}
}

// mcpLogs returns the MCP log files Claude Code keeps in home of our
// plugin's server, one per session that started it.
func mcpLogs(home string) []string {
	logs, _ := filepath.Glob(filepath.Join(home, ".cache", "claude-cli-nodejs", "*", "mcp-logs-plugin-atm-agent-mcp-codex", "*"))
	return logs
}

// mcpLogVerdict returns what an MCP log says of how its session's
// connection ended: the first of verdictWords it logged, or "".
func mcpLogVerdict(file string) string {
	for _, line := range grepLines(file, `"debug":"`) {
		for _, v := range verdictWords {
			if strings.Contains(line, `"debug":"`+v) {
				return v
			}
		}
	}
	return ""
}

// raceExitEnv is the GORACE of every program Claude Code starts in these
// tests: the test's own options, and no sleep on exit. The atm-agent-mcp
// and mockcodex that Claude Code runs here are this race-built test binary
// (testscript's RunMain), which sleeps atexit_sleep_ms (1 s by default)
// after every successful exit; the plugin's launcher runs `atm-agent-mcp
// plugin-version` before it starts serve, so each start of our plugin's
// server took over a second (measured: plugin-version 1.1 s, 0.09 s
// without the sleep; the connection 1.2 s, 0.3 s without), and under load
// past the 2 s that Claude Code waits for a plugin's server before init.
// Claude Code passes its environment on to the MCP servers it starts
// (plugins' and --mcp-config's), and serve to its agents.
func raceExitEnv() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// offeredTools returns, sorted, the names of the tools starting with
// prefix that a request offered the model: loaded (its tools) or deferred
// (named in its text for ToolSearch to load).
func offeredTools(r *modelRequest, prefix string) []string {
	re := regexp.MustCompile(regexp.QuoteMeta(prefix) + `[A-Za-z0-9_-]+`)
	seen := map[string]bool{}
	for _, name := range r.Tools {
		if strings.HasPrefix(name, prefix) {
			seen[name] = true
		}
	}
	texts := []string{r.System}
	for _, mm := range r.Messages {
		for _, bl := range mm.Blocks {
			if bl.Type == "text" {
				texts = append(texts, bl.Text)
			}
		}
	}
	for _, text := range texts {
		for _, name := range re.FindAllString(text, -1) {
			seen[name] = true
		}
	}
	var out []string
	for name := range seen {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
