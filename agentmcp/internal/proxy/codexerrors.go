package proxy

import (
	"context"
	"errors"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// The Codex child's failures in Codex's own words. The session layer maps
// the failures of any child that runs every session of its kind
// (session.BackendError: how it died, the supervisor's advice); what only
// Codex's supervisor knows is how Codex is installed and configured, so
// the errors about a Codex that cannot be started at all are made here,
// and every error of a call on the child (codex.Turn, Forward,
// Unavailable) leaves this supervisor mapped.

// InstallHint says how to install Codex, for errors about a missing one.
const InstallHint = "npm install -g @openai/codex"

// codexError maps a failure of the Codex child to the proxy's errors:
// CHILD_PROCESS_DEAD with how it died (FR-11.2) and what brings Codex back,
// REQUEST_TIMEOUT, or an internal error; the failure stays underneath
// (errors.As finds the *backend.ExitError). The advice is the supervisor's
// (a *backend.RecoveryError: restart, refused until, shutting down), else
// to restart the MCP server. An error that is a proxy error already is
// returned as it is.
func codexError(err error) error {
	var pe *proxyerr.Error
	if errors.As(err, &pe) {
		return err // mapped already (a refused restart on demand, say)
	}
	var re *backend.RecoveryError
	errors.As(err, &re)
	var nf *backend.NotFoundError
	switch {
	case errors.As(err, &nf):
		data := map[string]any{}
		if re != nil {
			for k, v := range re.Data {
				data[k] = v
			}
		}
		return notFoundError(err, nf, re, data)
	case errors.Is(err, backend.ErrHandshake) && !errors.As(err, new(*backend.ExitError)):
		advice, data := "restart the MCP server to start a new one", map[string]any{}
		inner := err
		if re != nil {
			advice, inner = re.Advice, re.Err
			for k, v := range re.Data {
				data[k] = v
			}
		}
		data["handshake"] = inner.Error()
		return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, data,
			"codex could not be started: %v (check codex_bin and handshake_timeout_secs, then %s)", inner, advice)
	}
	return session.BackendError(registry.DefaultKind, err) // how the child died, with the advice
}

// turnError is codexError for a turn's failure: a turn that timed out or
// was cancelled is the session layer's to map (it names the session).
func turnError(err error) error {
	if err == nil || errors.As(err, new(*backend.TimeoutError)) || errors.Is(err, context.Canceled) {
		return err
	}
	return codexError(err)
}

// notFoundError is codexError for a Codex binary that cannot be run
// (backend.ErrNotFound): the message names the binary, the PATH serve gave
// it and how to install it or point codex_bin at it. A restart helps only
// once Codex is there, so the advice says so: agent_restart_codex after
// installing when the supervisor would accept one now (a
// *backend.RecoveryError whose advice names it, no crash loop); else the
// supervisor's own advice (a crash loop, shutting down, on_demand);
// without one, restarting the MCP server.
func notFoundError(err error, nf *backend.NotFoundError, re *backend.RecoveryError, data map[string]any) error {
	data["codex_bin"] = nf.Bin
	data["path"] = nf.Path
	data["not_found"] = true
	data["install"] = InstallHint
	var ee *backend.ExitError
	if errors.As(err, &ee) {
		data["exit_code"] = ee.Status.Code
		if ee.Stderr != "" {
			data["stderr"] = ee.Stderr
		}
	}
	then := "then restart the MCP server"
	if re != nil {
		_, refused := re.Data["restart_refused"]
		switch {
		case !refused && strings.Contains(re.Advice, "agent_restart_codex"):
			then = "after installing it, call agent_restart_codex (before that, a restart fails the same way)"
		default:
			then = re.Advice
		}
	}
	where := "into a directory on that PATH"
	if strings.ContainsRune(nf.Bin, '/') {
		where = "at that path"
	}
	return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, data,
		"codex could not be started: %s; install Codex (%s) %s, or set codex_bin (--codex-bin) to an installed Codex and restart the MCP server; %s",
		nf, InstallHint, where, then)
}
