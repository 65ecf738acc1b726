// Package cli is the command line of atm-agent-mcp: `serve`, `tools`,
// `config`, `sessions`, `summary` and `doctor`, parsed with kong, and the
// hidden `plugin-version` (plugin.go: the Claude Code plugin's launcher and
// doctor compare the plugin version the binary was built with).
//
// `doctor` (doctor.go, its checks in doctorchecks.go) resolves the
// configuration as serve does and checks, one line each with the fix, what
// serve needs: the configuration, the team, the identity's claim, the Codex
// binary with its version and protocol, Codex's login, bubblewrap,
// Claude Code's session team, a failure of the plugin's server that Claude
// Code cached (doctorcache.go), the plugin's version against the binary's
// (doctorplugin.go) and which ACP agent kinds are installed
// (doctoragents.go). It creates nothing and exits 1 when something needed
// is missing.
//
// `serve` inside one of serve's own agents (config.EnvParentServe set)
// reads no configuration: it runs [Programs].Nested, which stands by.
//
// [Run] is the whole program: it parses the arguments, resolves the
// configuration with package config, runs the command and returns the exit
// code (0 ok, 1 failure, 2 usage error). It never writes to stdout except
// the command's own output: `serve` and `tools` hand stdout to the MCP
// server untouched, and every diagnostic goes to stderr or the log file.
//
// The MCP servers themselves are not in this package: Run is given them as
// [Programs] (Serve, Tools and Nested); without one, its command fails with
// a message on stderr.
package cli
