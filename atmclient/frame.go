package atmclient

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf16"
)

// Claude Code's protocol frames travel as a JSON object in a message's
// text (see Message.IsProtocol). These are the types this package builds
// or that a member of a Claude Code team must answer; Claude Code also
// sends plan_approval_*, permission_*, sandbox_permission_*,
// team_permission_update and mode_set_request frames.
const (
	// FrameShutdownRequest asks a teammate to end:
	// {"type":"shutdown_request","requestId":"shutdown-<n>@<name>","from","reason"?,"timestamp"}.
	FrameShutdownRequest = "shutdown_request"
	// FrameShutdownResponse answers it (see ShutdownResponseText).
	FrameShutdownResponse = "shutdown_response"
	// FrameIdleNotification tells the lead a teammate's turn ended (see
	// IdleNotification).
	FrameIdleNotification = "idle_notification"
)

// The idle reasons of an idle notification.
const (
	IdleAvailable   = "available"   // the turn ended normally
	IdleInterrupted = "interrupted" // the turn was interrupted
	IdleFailed      = "failed"      // the turn failed
)

// MaxIdleResult is the longest result an idle notification carries, in
// UTF-16 code units (JavaScript string length): Claude Code shows at most
// that much of a teammate's result to the lead's model.
const MaxIdleResult = 4000

// Frame is the typed view of a protocol frame (Message.Frame). String
// fields are "" when the key is absent or not a string.
type Frame struct {
	Type       string          // "shutdown_request", "idle_notification", …
	RequestID  string          // "requestId" (requests) or "request_id" (responses)
	From       string          // the sender named inside the frame
	Reason     string          // shutdown request or response reason
	IdleReason string          // idle_notification: IdleAvailable, IdleInterrupted or IdleFailed
	Summary    string          // idle_notification summary
	Result     string          // idle_notification result
	Approve    *bool           // shutdown_response and plan_approval_response; nil when absent
	Raw        json.RawMessage // the frame's JSON as it was in the text
}

// Frame decodes the message's text as a protocol frame; ok is false when
// the message is not a protocol message (IsProtocol).
func (m Message) Frame() (f Frame, ok bool) {
	fields, ok := protocolFields(m.Text)
	if !ok {
		return Frame{}, false
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			var s string
			if raw, ok := fields[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
				return s
			}
		}
		return ""
	}
	f = Frame{
		Type:       str("type"),
		RequestID:  str("requestId", "request_id"),
		From:       str("from"),
		Reason:     str("reason"),
		IdleReason: str("idleReason"),
		Summary:    str("summary"),
		Result:     str("result"),
		Raw:        json.RawMessage(strings.TrimSpace(m.Text)),
	}
	var b bool
	if raw, ok := fields["approve"]; ok && json.Unmarshal(raw, &b) == nil {
		f.Approve = &b
	}
	return f, true
}

// protocolFields parses text as a JSON object with a non-empty string
// "type".
func protocolFields(text string) (map[string]json.RawMessage, bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") {
		return nil, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &fields) != nil {
		return nil, false
	}
	var typ string
	if json.Unmarshal(fields["type"], &typ) != nil || typ == "" {
		return nil, false
	}
	return fields, true
}

// ShutdownResponseText returns the text of a message answering a
// shutdown_request, as Claude Code's teammates send it:
// {"type":"shutdown_response","request_id":…,"approve":…,"reason":…}, the
// reason left out when "".
func ShutdownResponseText(requestID string, approve bool, reason string) string {
	b := []byte(`{"type":"shutdown_response","request_id":`)
	b = appendString(b, requestID)
	if approve {
		b = append(b, `,"approve":true`...)
	} else {
		b = append(b, `,"approve":false`...)
	}
	if reason != "" {
		b = append(b, `,"reason":`...)
		b = appendString(b, reason)
	}
	return string(append(b, '}'))
}

// IdleNotification is the frame a teammate sends the lead when its turn
// ends; Claude Code shows it as "Teammate @<from> finished".
type IdleNotification struct {
	From       string    // the teammate's name
	IdleReason string    // IdleAvailable, IdleInterrupted or IdleFailed; "" means IdleAvailable
	Summary    string    // optional
	Result     string    // optional: the turn's result; clipped to MaxIdleResult
	Timestamp  time.Time // optional: zero means now
}

// Text returns the notification as the text of a message:
// {"type":"idle_notification","from","timestamp","idleReason","summary"?,"result"?},
// the timestamp in Claude Code's layout (UTC, milliseconds, "Z").
func (n IdleNotification) Text() string {
	ts := n.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	reason := n.IdleReason
	if reason == "" {
		reason = IdleAvailable
	}
	b := []byte(`{"type":"idle_notification","from":`)
	b = appendString(b, n.From)
	b = append(b, `,"timestamp":`...)
	b = appendString(b, ts.UTC().Format("2006-01-02T15:04:05.000Z"))
	b = append(b, `,"idleReason":`...)
	b = appendString(b, reason)
	if n.Summary != "" {
		b = append(b, `,"summary":`...)
		b = appendString(b, n.Summary)
	}
	if n.Result != "" {
		b = append(b, `,"result":`...)
		b = appendString(b, clipUTF16(n.Result, MaxIdleResult))
	}
	return string(append(b, '}'))
}

// clipUTF16 returns the longest prefix of s, cut on a character boundary,
// whose length in UTF-16 code units is at most n.
func clipUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if utf16.RuneLen(r) == 2 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}
