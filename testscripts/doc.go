// Package testscripts holds the end-to-end testscript conversations that
// drive bin/atm-agent-mcp against a mock Codex child.
package testscripts
