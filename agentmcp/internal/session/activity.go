package session

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// defaultEventRing is the per-session event ring size (agent_status).
const defaultEventRing = 500

// eventRecord is one event kept in the session's ring buffer.
type eventRecord struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Summary string    `json:"summary,omitempty"`
}

// turnItem is one item of the current turn: a command run, a file change
// or a tool call.
type turnItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"` // command, file_change, tool_call
	Status  string `json:"status"`
	Summary string `json:"summary"`
}

// activity is what a session's events tell about it, for agent_status:
// a bounded ring of events, the recent agent messages, the items of the
// current turn and the token usage.
type activity struct {
	size     int
	ring     []eventRecord
	start    int // ring is circular once full
	messages []string
	items    []*turnItem
	tokens   json.RawMessage
	// problem is the current turn's last error or retry notice from Codex
	// (its model unreachable, a stream error), nil when none.
	problem *Problem
}

// Problem is the last error or retry notice Codex sent during a turn: why
// a turn is slow or failed, for agent_status and a timeout's error.
type Problem struct {
	Message  string    `json:"message"`
	At       time.Time `json:"at"`
	Retrying bool      `json:"retrying"` // Codex said it would retry
}

const maxAgentMessages = 20

func (a *activity) add(r eventRecord) {
	if a.size <= 0 {
		a.size = defaultEventRing
	}
	if len(a.ring) < a.size {
		a.ring = append(a.ring, r)
		return
	}
	a.ring[a.start] = r
	a.start = (a.start + 1) % a.size
}

// events returns the last n events, oldest first.
func (a *activity) events(n int) []eventRecord {
	all := append(append([]eventRecord{}, a.ring[a.start:]...), a.ring[:a.start]...)
	if n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

func (a *activity) item(id, typ string) *turnItem {
	for _, it := range a.items {
		if it.ID == id {
			return it
		}
	}
	it := &turnItem{ID: id, Type: typ, Status: "running"}
	a.items = append(a.items, it)
	return it
}

func (a *activity) message(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	a.messages = append(a.messages, Clip(text, 2000))
	if len(a.messages) > maxAgentMessages {
		a.messages = a.messages[len(a.messages)-maxAgentMessages:]
	}
}

// record interprets one event. Only the event types worth a summary are
// decoded; deltas and the like are recorded by type alone.
func (a *activity) record(e codexchild.Event, now time.Time) {
	r := eventRecord{Time: now, Type: e.Type}
	switch e.Type {
	case "task_started", "turn/started":
		a.items = nil
		a.problem = nil
	case "stream_error", "background_event":
		// mcp-server's notices: a stream error ("Reconnecting... 2/5"), or
		// a background event that may say Codex is retrying.
		if msg := a.mcpMessage(e); msg != "" {
			r.Summary = Clip(msg, 200)
			lower := strings.ToLower(msg)
			if e.Type == "stream_error" || strings.Contains(lower, "reconnecting") || strings.Contains(lower, "retry") {
				a.problem = &Problem{Message: Clip(msg, 500), At: now, Retrying: true}
			}
		}
	case "agent_message", "exec_command_begin", "exec_command_end", "patch_apply_begin", "patch_apply_end",
		"mcp_tool_call_begin", "mcp_tool_call_end", "token_count", "error", "turn_aborted", "exec_approval_request",
		"apply_patch_approval_request":
		r.Summary = a.mcpEvent(e)
		if e.Type == "error" {
			a.appError(e, &r, now)
		}
	case "item/started", "item/completed":
		r.Summary = a.appItem(e)
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage json.RawMessage `json:"tokenUsage"`
		}
		if json.Unmarshal(e.Params, &p) == nil && len(p.TokenUsage) > 0 {
			a.tokens = p.TokenUsage
		}
	}
	a.add(r)
}

// appError records an error event as the turn's problem: mcp-server's
// {msg: {type: error, message}} (summarised already) or app-server's
// {error: {message}, willRetry}.
func (a *activity) appError(e codexchild.Event, r *eventRecord, now time.Time) {
	if r.Summary != "" {
		a.problem = &Problem{Message: r.Summary, At: now}
		return
	}
	var p struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		WillRetry bool `json:"willRetry"`
	}
	if json.Unmarshal(e.Params, &p) == nil && p.Error.Message != "" {
		r.Summary = Clip(p.Error.Message, 200)
		a.problem = &Problem{Message: Clip(p.Error.Message, 500), At: now, Retrying: p.WillRetry}
	}
}

// mcpMessage reads msg.message of an mcp-server event.
func (a *activity) mcpMessage(e codexchild.Event) string {
	var topBuf, msgBuf [8]jsonrpcframe.Member
	top, _ := jsonrpcframe.AppendMembers(topBuf[:0], e.Params)
	msg, _ := jsonrpcframe.AppendMembers(msgBuf[:0], jsonrpcframe.Lookup(top, "msg"))
	s, _ := jsonrpcframe.String(jsonrpcframe.Lookup(msg, "message"))
	return s
}

func (a *activity) mcpEvent(e codexchild.Event) string {
	// Read the few fields needed without decoding the event: this runs for
	// every agent message and token count.
	var topBuf, msgBuf [16]jsonrpcframe.Member
	top, _ := jsonrpcframe.AppendMembers(topBuf[:0], e.Params)
	msg, ok := jsonrpcframe.AppendMembers(msgBuf[:0], jsonrpcframe.Lookup(top, "msg"))
	if !ok {
		return ""
	}
	str := func(name string) string {
		s, _ := jsonrpcframe.String(jsonrpcframe.Lookup(msg, name))
		return s
	}
	var m struct {
		Type, Message, CallID, Reason string
		Command, Info                 json.RawMessage
		ExitCode                      *int
		Changes                       int
		Success                       *bool
		Invocation                    struct{ Server, Tool string }
	}
	m.Type = str("type")
	switch m.Type {
	case "agent_message", "error":
		m.Message = str("message")
	case "turn_aborted":
		m.Reason = str("reason")
	case "token_count":
		m.Info = jsonrpcframe.Lookup(msg, "info")
	default:
		m.CallID = str("call_id")
		m.Command = jsonrpcframe.Lookup(msg, "command")
		if n, err := strconv.Atoi(string(jsonrpcframe.Lookup(msg, "exit_code"))); err == nil {
			m.ExitCode = &n
		}
		if changes, ok := jsonrpcframe.Members(jsonrpcframe.Lookup(msg, "changes")); ok {
			m.Changes = len(changes)
		}
		if b, err := strconv.ParseBool(string(jsonrpcframe.Lookup(msg, "success"))); err == nil {
			m.Success = &b
		}
		if inv, ok := jsonrpcframe.Members(jsonrpcframe.Lookup(msg, "invocation")); ok {
			m.Invocation.Server, _ = jsonrpcframe.String(jsonrpcframe.Lookup(inv, "server"))
			m.Invocation.Tool, _ = jsonrpcframe.String(jsonrpcframe.Lookup(inv, "tool"))
		}
	}
	switch m.Type {
	case "agent_message":
		a.message(m.Message)
		return Clip(m.Message, 120)
	case "exec_command_begin":
		it := a.item(m.CallID, "command")
		it.Summary = ShortCommand(m.Command)
		return it.Summary
	case "exec_command_end":
		it := a.item(m.CallID, "command")
		it.Status = "completed"
		if m.ExitCode != nil && *m.ExitCode != 0 {
			it.Status = fmt.Sprintf("failed (exit %d)", *m.ExitCode)
		}
		if it.Summary == "" {
			it.Summary = ShortCommand(m.Command)
		}
		return it.Summary + ": " + it.Status
	case "patch_apply_begin":
		it := a.item(m.CallID, "file_change")
		it.Summary = fmt.Sprintf("%d file%s", m.Changes, plural(m.Changes))
		return "editing " + it.Summary
	case "patch_apply_end":
		it := a.item(m.CallID, "file_change")
		it.Status = "completed"
		if m.Success != nil && !*m.Success {
			it.Status = "failed"
		}
		return "patch " + it.Status
	case "mcp_tool_call_begin":
		it := a.item(m.CallID, "tool_call")
		it.Summary = m.Invocation.Server + "." + m.Invocation.Tool
		return it.Summary
	case "mcp_tool_call_end":
		it := a.item(m.CallID, "tool_call")
		it.Status = "completed"
		return it.Summary + ": completed"
	case "token_count":
		if len(m.Info) > 0 && string(m.Info) != "null" {
			a.tokens = append(json.RawMessage(nil), m.Info...) // not the whole event
		}
	case "error":
		return Clip(m.Message, 200)
	case "turn_aborted":
		return m.Reason
	case "exec_approval_request":
		return "approval: " + ShortCommand(m.Command)
	case "apply_patch_approval_request":
		return "approval: patch"
	}
	return ""
}

func (a *activity) appItem(e codexchild.Event) string {
	var p struct {
		Item struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Status  string          `json:"status"`
			Command json.RawMessage `json:"command"`
			Changes []any           `json:"changes"`
			Server  string          `json:"server"`
			Tool    string          `json:"tool"`
			Text    string          `json:"text"`
		} `json:"item"`
	}
	if json.Unmarshal(e.Params, &p) != nil {
		return ""
	}
	it := p.Item
	var kind, summary string
	switch it.Type {
	case "agentMessage":
		if e.Type == "item/completed" {
			a.message(it.Text)
			return Clip(it.Text, 120)
		}
		return ""
	case "commandExecution":
		kind, summary = "command", ShortCommand(it.Command)
	case "fileChange":
		kind, summary = "file_change", fmt.Sprintf("%d file%s", len(it.Changes), plural(len(it.Changes)))
	case "mcpToolCall":
		kind, summary = "tool_call", it.Server+"."+it.Tool
	default:
		return it.Type
	}
	ti := a.item(it.ID, kind)
	ti.Summary = summary
	if it.Status != "" {
		ti.Status = it.Status
	}
	return summary + ": " + ti.Status
}
