package proxy

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/mcpconn"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/tools"
)

// instructions are the server's instructions: the tools' own, then the
// notices (Options.Notices), which Claude Code puts before the model with
// them.
func instructions(notices []string) string {
	if len(notices) == 0 {
		return tools.Instructions
	}
	return tools.Instructions + "\n\nNote: " + strings.Join(notices, "\nNote: ")
}

// noticed hands the notices (Options.Notices) to the client once, with the
// first tool call's result or error: the model reads them there even when
// the client shows no server instructions. An atomic flag, no lock.
type noticed struct{ told atomic.Bool }

// annotate returns the call's answer with the notices added, the first
// time it is called with an answer that can carry them while there are
// notices: an error result's or a result's text gets them appended and
// its structured content a "notices" list; a proxy error gets them in its
// message and data. A call answered already (mcpconn.ErrAnswered), a task
// and a request for input pass unchanged and leave them for the next one.
func (n *noticed) annotate(res *mcpconn.ToolResult, err error, notices []string) (*mcpconn.ToolResult, error) {
	if len(notices) == 0 || n.told.Load() {
		return res, err
	}
	note := " (note: " + strings.Join(notices, "; ") + ")"
	var pe *proxyerr.Error
	switch {
	case err != nil && errors.As(err, &pe):
		if !n.told.CompareAndSwap(false, true) {
			return res, err
		}
		out := *pe
		out.Msg = pe.Msg + note
		out.Data = maps.Clone(pe.Data)
		if out.Data == nil {
			out.Data = map[string]any{}
		}
		out.Data["notices"] = notices
		return res, &out
	case err != nil || res == nil || res.Task != nil || res.Input != nil:
		return res, err
	}
	m, ok := structuredMap(res.Structured)
	if !ok || !n.told.CompareAndSwap(false, true) {
		return res, err
	}
	out := *res
	out.Text = strings.TrimRight(res.Text, "\n") + "\n\n" + strings.TrimSpace(note)
	if m != nil {
		m["notices"] = notices
		out.Structured = m
	}
	return &out, nil
}

// structuredMap returns a copy of a result's structured content as a map
// (nil for none), through JSON when it is a struct; ok is false when it is
// not a JSON object.
func structuredMap(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case map[string]any:
		return maps.Clone(x), true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}
