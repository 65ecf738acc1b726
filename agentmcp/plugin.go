package agentmcp

import (
	_ "embed"
	"encoding/json"
)

// pluginManifest is the Claude Code plugin's manifest, compiled in so that
// the binary knows the plugin version it was built with (see the cli
// package's plugin.go: the launcher and doctor compare it with the plugin
// that runs the binary).
//
//go:embed claude-plugin/atm-agent-mcp/.claude-plugin/plugin.json
var pluginManifest []byte

// pluginVersion is the version in pluginManifest.
func pluginVersion() string {
	var m struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(pluginManifest, &m); err != nil {
		panic("agentmcp: the compiled-in plugin.json: " + err.Error())
	}
	return m.Version
}
