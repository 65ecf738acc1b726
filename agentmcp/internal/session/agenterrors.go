package session

import (
	"context"
	"errors"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/backend"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// agentError is turnError for a session of an agent kind whose backend
// runs one process per session (an ACP agent's; no
// backend.WholeRestarter): the same codes as the failures of a child that
// runs every session — REQUEST_TIMEOUT (-32006), CHILD_PROCESS_DEAD
// (-32005) with how the agent died, an internal error — and the same
// data, but the message names the kind, and the advice is what holds for
// such an agent: the backend starts the session's process again at its
// next turn (continuing its conversation), so neither a restart of a
// shared child nor of the MCP server is needed.
func agentError(rec registry.Session, err error) error {
	kind := rec.Kind()
	again := "the next turn of the session starts a new " + kind + " process and continues the conversation"
	if errors.Is(err, backend.ErrHandshake) {
		// It never started: there may be no session to continue (a first
		// turn keeps none).
		again = "atm-agent-mcp doctor checks its command; the next call starts it again"
	}
	var te *backend.TimeoutError
	var ee *backend.ExitError
	var nf *backend.NotFoundError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &te):
		return proxyerr.New(proxyerr.ErrRequestTimeout, map[string]any{"agent_id": rec.AgentID, "agent": kind,
			"threadId": firstNonEmpty(te.ThreadID, rec.BackendID), "timeout_secs": te.After.Seconds(), "partial": te.Partial},
			"%s turn timed out after %s (agent_id %s); %s", kind, te.After, rec.AgentID, again)
	case errors.As(err, &nf):
		return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err,
			map[string]any{"agent": kind, "command": nf.Bin, "path": nf.Path, "not_found": true},
			"%s could not be started: %s; install it, or set command in [plugins.atm-agent-mcp.agents.%s] and restart the MCP server (atm-agent-mcp doctor checks every agent)",
			kind, nf, kind)
	case errors.As(err, &ee):
		data := map[string]any{"agent": kind}
		status := exitFacts(ee, data)
		msg := "%s agent process is not running: %s; %s"
		if errors.Is(err, backend.ErrHandshake) {
			msg = "%s could not be started: %s; %s"
		}
		return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, data, msg, kind, status+lastLine(ee.Stderr), again)
	case errors.Is(err, backend.ErrHandshake):
		return proxyerr.Wrap(proxyerr.ErrChildProcessDead, err, map[string]any{"agent": kind, "handshake": err.Error()},
			"%s could not be started: %v (handshake_timeout_secs bounds its start); %s", kind, err, again)
	case errors.Is(err, context.DeadlineExceeded):
		return proxyerr.Wrap(proxyerr.ErrRequestTimeout, err, map[string]any{"agent": kind}, "%s did not answer in time; %s", kind, again)
	}
	return proxyerr.Wrap(proxyerr.ErrInternal, err, map[string]any{"agent": kind}, "%s: %v", kind, err)
}

// lastLine is the last non-empty line of an agent's stderr in brackets
// after a space, or "".
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return " (" + l + ")"
	}
	return ""
}
