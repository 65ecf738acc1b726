package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Claude Code remembers a plugin's stdio MCP server that failed to connect
// in {claude config dir}/mcp-needs-auth-cache.json, an object keyed
// "plugin:<plugin>:<server>" whose entries hold the failure's timestamp
// (Unix milliseconds) and optionally its ttlMs. While an entry is younger
// than its ttl (15 minutes by default) every new session, -p or
// interactive, skips that server ("Skipping connection (recent failure
// cached …)"), although `claude mcp list` says it is connected. Only
// plugin servers are cached this way (read from Claude Code 2.1.318 and
// 2.1.332; testscripts' TestClaudeCodeCachedFailure has 2.1.332 write the
// file, {"plugin:atm-agent-mcp:codex":{"timestamp":…,"id":…}}, and doctor
// read it); interactive /mcp → Reconnect clears the entry.
const (
	claudeCacheFile = "mcp-needs-auth-cache.json"
	// ourCacheKey starts the keys of this plugin's servers.
	ourCacheKey = "plugin:" + pluginName + ":"
	// claudeCacheTTL is the entries' ttl when they carry none.
	claudeCacheTTL = 15 * time.Minute
)

// pluginName is the name of the Claude Code plugin in its plugin.json.
const pluginName = "atm-agent-mcp"

// cachedFailure is one failure of our plugin's server that Claude Code
// remembers.
type cachedFailure struct {
	Key   string
	At    time.Time
	Until time.Time // Claude Code skips the server until then
}

// cachedFailures reads the failures of our plugin's servers from Claude
// Code's cache file; a missing file has none.
func cachedFailures(path string) ([]cachedFailure, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var entries map[string]struct {
		Timestamp int64  `json:"timestamp"`
		TTLMs     *int64 `json:"ttlMs"`
	}
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []cachedFailure
	for key, e := range entries {
		if !strings.HasPrefix(key, ourCacheKey) {
			continue
		}
		ttl := claudeCacheTTL
		if e.TTLMs != nil {
			ttl = time.Duration(*e.TTLMs) * time.Millisecond
		}
		at := time.UnixMilli(e.Timestamp)
		out = append(out, cachedFailure{Key: key, At: at, Until: at.Add(ttl)})
	}
	slices.SortFunc(out, func(a, b cachedFailure) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// claudeConfigDir is Claude Code's configuration directory:
// CLAUDE_CONFIG_DIR, else ~/.claude.
func (d *doctor) claudeConfigDir() string {
	if dir := strings.TrimSpace(d.getenv("CLAUDE_CONFIG_DIR")); dir != "" {
		return dir
	}
	home := d.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// claudeCache reports a failure of our plugin's server that Claude Code
// cached: until it expires, Claude Code starts every session without our
// tools.
func (d *doctor) claudeCache(now time.Time) check {
	c := check{Name: "claude-cache", Status: statusOK}
	path := filepath.Join(d.claudeConfigDir(), claudeCacheFile)
	failures, err := cachedFailures(path)
	if err != nil {
		c.Status, c.Detail = statusWarn, "cannot read Claude Code's cache of failed MCP servers: "+err.Error()
		c.Fix = "delete " + path + " (Claude Code writes it again when a server fails)"
		return c
	}
	var live, expired []string
	for _, f := range failures {
		if now.Before(f.Until) {
			live = append(live, fmt.Sprintf("%s failed at %s: Claude Code starts sessions without it until %s",
				f.Key, f.At.Local().Format(time.TimeOnly), f.Until.Local().Format(time.TimeOnly)))
		} else {
			expired = append(expired, f.Key)
		}
	}
	switch {
	case len(live) > 0:
		c.Status = statusMissing
		c.Detail = strings.Join(live, "; ") + " (" + path + "; `claude mcp list` still says Connected)"
		c.Fix = "fix what made it fail (the checks above; its message is in Claude Code's MCP log under ~/.cache/claude-cli-nodejs), then clear the entry: " +
			"in an interactive session run /mcp, select the server and Reconnect; or delete the file: rm " + path +
			" (it holds only what Claude Code remembers about failed servers)"
	case len(expired) > 0:
		c.Detail = "an earlier failure of " + strings.Join(expired, ", ") + " is cached in " + path + ", but it has expired: Claude Code tries the server again"
	default:
		c.Detail = "Claude Code has cached no failure of the atm-agent-mcp plugin's server (" + path + ")"
	}
	return c
}
