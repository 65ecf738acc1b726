package codexchild

import (
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
)

// notFoundCode is the exit code of a command that could not be executed
// (the shells' convention, and the guard's when its exec fails).
const notFoundCode = 127

// notFound is the *backend.NotFoundError of cfg's binary with detail: the
// Codex binary could not be run, so no restart helps until it is installed
// or Config.Bin points at it.
func notFound(cfg Config, detail string) *backend.NotFoundError {
	return &backend.NotFoundError{Bin: cfg.Bin, Program: "codex binary", Path: envValue(cfg.env(), "PATH"), Detail: detail}
}

// notFoundAtStart returns the *backend.NotFoundError of a child that exited before
// its handshake with ee, or nil when ee does not say that the binary could
// not be run: exit code 127 (the guard's when its exec failed: its stderr
// line "guard: exec: …" is the detail; else the child's last stderr line).
func notFoundAtStart(cfg Config, ee *backend.ExitError) *backend.NotFoundError {
	if ee == nil || ee.Status.Code != notFoundCode || ee.Status.Signal != "" || ee.Reason != "" {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(ee.Stderr), "\n")
	detail := strings.TrimSpace(lines[len(lines)-1])
	for _, l := range lines {
		if g, ok := strings.CutPrefix(strings.TrimSpace(l), "guard: "); ok {
			detail = g
		}
	}
	return notFound(cfg, detail)
}

// envValue returns the last value of key in env ("" when unset), as
// exec.Cmd uses it.
func envValue(env []string, key string) string {
	var v string
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
