// Package cli is the command line of atm-agent-mcp: `serve`, `tools`,
// `config`, `sessions` and `summary`, parsed with kong.
//
// [Run] is the whole program: it parses the arguments, resolves the
// configuration with package config, runs the command and returns the exit
// code (0 ok, 1 failure, 2 usage error). It never writes to stdout except
// the command's own output: `serve` and `tools` hand stdout to the MCP
// server untouched, and every diagnostic goes to stderr or the log file.
//
// The MCP servers themselves are not in this package: Run is given them as
// [Programs] (Serve and Tools); without one, its command fails with a
// message on stderr.
package cli
