package proxy

import (
	"errors"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
)

// configWarned hands the configuration's warnings (Options.ConfigWarnings:
// a misspelt section or key, a team without its directory) to the client
// once, with the first tool call that fails: serve's log goes to stderr,
// which Claude Code does not show, and the user would otherwise run with
// settings they did not choose without a word. agent_status lists them
// at any time.
type configWarned struct{ told atomic.Bool }

// annotate returns err with the warnings appended to its message and in
// its data (config_warnings), the first time it is called with a proxy
// error while there are warnings; otherwise err unchanged. The error's
// code, kind and cause stay as they were.
func (c *configWarned) annotate(err error, warnings []string) error {
	var pe *proxyerr.Error
	if err == nil || len(warnings) == 0 || !errors.As(err, &pe) || !c.told.CompareAndSwap(false, true) {
		return err
	}
	out := *pe
	out.Msg = pe.Msg + " (note: the configuration has warnings, so some settings may not be what you meant: " +
		strings.Join(warnings, "; ") + ")"
	out.Data = maps.Clone(pe.Data)
	if out.Data == nil {
		out.Data = map[string]any{}
	}
	out.Data["config_warnings"] = warnings
	return &out
}
