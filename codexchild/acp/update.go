package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EventKind is the neutral kind of an Event, whatever the agent's
// sessionUpdate was called.
type EventKind string

// The event kinds. An update of a kind this client does not know is
// EventOther, with Event.Update naming it.
const (
	EventMessage       EventKind = "message"        // agent_message_chunk: Text, MessageID
	EventThought       EventKind = "thought"        // agent_thought_chunk: Text
	EventUserMessage   EventKind = "user_message"   // user_message_chunk (load replay): Text
	EventToolCall      EventKind = "tool_call"      // tool_call, tool_call_update: Tool
	EventPlan          EventKind = "plan"           // plan: Plan (the whole list)
	EventUsage         EventKind = "usage"          // usage_update: Usage
	EventCommands      EventKind = "commands"       // available_commands_update
	EventMode          EventKind = "mode"           // current_mode_update: ModeID
	EventConfigOptions EventKind = "config_options" // config_option_update
	EventSessionInfo   EventKind = "session_info"   // session_info_update
	EventOther         EventKind = "other"          // any other sessionUpdate
	// EventPermission is not a session/update: the agent asks for a
	// permission (Permission); the session is awaiting approval until
	// EventPermissionDone.
	EventPermission     EventKind = "permission"
	EventPermissionDone EventKind = "permission_done" // Permission, Decision
)

// Event is one thing the agent reported, in neutral terms.
type Event struct {
	SessionID string
	// Turn is the number of the turn the event belongs to (1, 2, … per
	// session); 0 when it arrived outside a turn (before the first, after
	// a prompt's response, or during session/load).
	Turn int64
	// Replay marks the history an agent replays during session/load.
	Replay bool
	Kind   EventKind
	// Update is the sessionUpdate discriminator as the agent sent it.
	Update string
	// Text is the text of a message, thought or user message chunk ("" for
	// a non-text content block; ContentType says which).
	Text        string
	ContentType string
	// MessageID groups the chunks of one message, when the agent sends it.
	MessageID string
	Tool      *ToolCall
	Plan      []PlanEntry
	Usage     *Usage
	ModeID    string
	// Permission and Decision describe EventPermission and
	// EventPermissionDone.
	Permission *PermissionRequest
	Decision   Decision
	// Raw is the update (or request params) as sent.
	Raw json.RawMessage
}

// ToolCall is what is known of one tool call: tool_call creates it,
// tool_call_update changes the fields it sends (and creates it when the id
// is unknown, as Gemini does for MCP tools).
type ToolCall struct {
	ID     string
	Title  string
	Kind   string // read, edit, delete, move, search, execute, think, fetch, other
	Status string // pending, in_progress, completed, failed
	// Created reports, on an event, that this update created the call.
	Created bool
	// RawInput and RawOutput are as the agent last sent them.
	RawInput  json.RawMessage
	RawOutput json.RawMessage
}

// PlanEntry is one entry of an agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// Usage is the context window fill (usage_update).
type Usage struct {
	Used int64 `json:"used"`
	Size int64 `json:"size"`
	Cost *struct {
		Amount   float64 `json:"amount"`
		Currency string  `json:"currency"`
	} `json:"cost,omitempty"`
}

// TurnTokens are one turn's tokens as a session/prompt answer's usage
// member counts them (the session-usage RFD): the turn's own, not the
// session's.
type TurnTokens struct {
	TotalTokens       int64 `json:"totalTokens"`
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	ThoughtTokens     int64 `json:"thoughtTokens,omitempty"`
	CachedReadTokens  int64 `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens int64 `json:"cachedWriteTokens,omitempty"`
}

// wireUpdate is every field of the session/update kinds the client reads.
type wireUpdate struct {
	SessionUpdate string          `json:"sessionUpdate"`
	Content       json.RawMessage `json:"content"`
	MessageID     string          `json:"messageId"`
	ToolCallID    string          `json:"toolCallId"`
	Title         *string         `json:"title"`
	Kind          *string         `json:"kind"`
	Status        *string         `json:"status"`
	RawInput      json.RawMessage `json:"rawInput"`
	RawOutput     json.RawMessage `json:"rawOutput"`
	Entries       []PlanEntry     `json:"entries"`
	Used          *int64          `json:"used"`
	Size          *int64          `json:"size"`
	Cost          json.RawMessage `json:"cost"`
	CurrentModeID string          `json:"currentModeId"`
}

// ParseUpdate reads the params of a session/update notification. It
// returns the session id and the event (Turn, Replay and the Created flag of
// a tool call are the session's to set). An update of an unknown kind is
// an EventOther, not an error; only params that are not an object with a
// sessionId and an update object are.
func ParseUpdate(params json.RawMessage) (string, Event, error) {
	if bytes.Contains(params, []byte(`_chunk"`)) && json.Valid(params) {
		if sid, ev, ok := parseChunk(params); ok {
			return sid, ev, nil
		}
	}
	return parseUpdate(params)
}

// parseUpdate is ParseUpdate through encoding/json, for every update.
func parseUpdate(params json.RawMessage) (string, Event, error) {
	var p struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", Event{}, fmt.Errorf("acp: session/update params: %w", err)
	}
	if p.SessionID == "" {
		return "", Event{}, fmt.Errorf("acp: session/update without sessionId")
	}
	var u wireUpdate
	if err := json.Unmarshal(p.Update, &u); err != nil {
		return p.SessionID, Event{}, fmt.Errorf("acp: session/update update: %w", err)
	}
	ev := Event{SessionID: p.SessionID, Update: u.SessionUpdate, Raw: p.Update}
	switch u.SessionUpdate {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
		switch u.SessionUpdate {
		case "agent_message_chunk":
			ev.Kind = EventMessage
		case "agent_thought_chunk":
			ev.Kind = EventThought
		default:
			ev.Kind = EventUserMessage
		}
		ev.MessageID = u.MessageID
		ev.ContentType, ev.Text = contentText(u.Content)
	case "tool_call", "tool_call_update":
		if u.ToolCallID == "" {
			return p.SessionID, Event{}, fmt.Errorf("acp: %s without toolCallId", u.SessionUpdate)
		}
		ev.Kind = EventToolCall
		ev.Tool = &ToolCall{ID: u.ToolCallID, RawInput: u.RawInput, RawOutput: u.RawOutput}
		set := func(dst *string, src *string) {
			if src != nil {
				*dst = *src
			}
		}
		set(&ev.Tool.Title, u.Title)
		set(&ev.Tool.Kind, u.Kind)
		set(&ev.Tool.Status, u.Status)
	case "plan":
		ev.Kind = EventPlan
		ev.Plan = u.Entries
	case "usage_update":
		ev.Kind = EventUsage
		us := &Usage{}
		if u.Used != nil {
			us.Used = *u.Used
		}
		if u.Size != nil {
			us.Size = *u.Size
		}
		if len(u.Cost) > 0 && string(u.Cost) != "null" {
			_ = json.Unmarshal(u.Cost, &us.Cost) // a malformed cost is no cost
		}
		ev.Usage = us
	case "available_commands_update":
		ev.Kind = EventCommands
	case "current_mode_update":
		ev.Kind = EventMode
		ev.ModeID = u.CurrentModeID
	case "config_option_update":
		ev.Kind = EventConfigOptions
	case "session_info_update":
		ev.Kind = EventSessionInfo
	default:
		ev.Kind = EventOther
	}
	return p.SessionID, ev, nil
}

// contentText returns a content block's type and, for a text block, its
// text.
func contentText(raw json.RawMessage) (typ, text string) {
	var c struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &c) != nil {
		return "", ""
	}
	if c.Type != "text" {
		return c.Type, ""
	}
	return c.Type, c.Text
}
