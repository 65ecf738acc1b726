package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// atmSections are the top-level tables of an ATM configuration file:
// ours (core, plugins) and ATM's own, which we leave alone.
var atmSections = []string{"core", "plugins", "roles", "aliases"}

// coreKeys are the keys of [core] that atm-agent-mcp reads.
var coreKeys = []string{"default_team", "identity"}

// sectionWarnings finds what looks like a misspelling of our sections in a
// parsed file: a top-level table close to an ATM section ([plugin],
// [cores]), a table under [plugins] that is meant to be ours
// ([plugins.atm_agent_mcp], [plugins.atm-agent]), and a [core] key close to
// one we read (default_tean). Everything it finds would otherwise be
// ignored without a word. Names far from ours are left alone: they may be
// ATM's or another plugin's.
func sectionWarnings(path string, doc map[string]any) []Warning {
	var ws []Warning
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		t, isTable := doc[k].(map[string]any)
		if !isTable || slices.Contains(atmSections, k) {
			continue
		}
		if hint := suggest(k, atmSections); hint != "" {
			msg := "unknown section, ignored" + hint
			if near(k, "plugins") {
				if _, ours := t[PluginName]; ours {
					msg = fmt.Sprintf("unknown section, ignored (did you mean [plugins.%s]?)", PluginName)
				}
			}
			ws = append(ws, Warning{File: path, Key: k, Message: msg})
		}
	}
	if plugins, ok := doc["plugins"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(plugins)) {
			if k != PluginName && looksLikeOurs(k) {
				ws = append(ws, Warning{File: path, Key: "plugins." + k,
					Message: fmt.Sprintf("unknown plugin section, ignored (did you mean [plugins.%s]?)", PluginName)})
			}
		}
	}
	if core, ok := doc["core"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(core)) {
			if slices.Contains(coreKeys, k) {
				continue
			}
			if hint := suggest(k, coreKeys); hint != "" {
				ws = append(ws, Warning{File: path, Key: "core." + k, Message: "unknown key, ignored" + hint})
			}
		}
	}
	return ws
}

// near reports whether a is a small misspelling of b.
func near(a, b string) bool { return editDistance(a, b) <= 2 }

// looksLikeOurs reports whether a plugin name is probably meant to be
// PluginName: the same letters with other separators or case
// (atm_agent_mcp, ATM-Agent-MCP), a few typos, or a shortening
// (atm-agent, agent-mcp).
func looksLikeOurs(name string) bool {
	squash := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r == '.' || r == ' ' {
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	n, ours := squash(name), squash(PluginName)
	return editDistance(n, ours) <= 2 || len(n) >= 6 && strings.Contains(ours, n)
}
