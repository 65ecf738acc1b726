package atmclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"
)

// TimestampLayout is the layout of the timestamps this package writes:
// RFC 3339 in UTC with exactly nine fractional digits, so that timestamps
// written by this package sort as strings in time order.
const TimestampLayout = "2006-01-02T15:04:05.000000000Z"

// Message is one element of an inbox file.
//
// The zero value of an optional field means the key was absent or null in
// the file. Extra holds every key this type does not model (pendingAckAt,
// color, type, …) with its raw JSON value; it is never nil for a message
// returned by this package and must not be modified.
type Message struct {
	From       string // sender name; may be "name@team"
	SourceTeam string // sender's team ("source_team"), optional
	Text       string // body ("text", or "content" when text is absent)
	Timestamp  string // as written; see Time
	Read       bool
	Summary    string // optional
	MessageID  string // optional "message_id"; Claude Code writes "msg_id" instead (in Extra; see ID)
	Extra      map[string]json.RawMessage
}

// Time parses Timestamp as an RFC 3339 instant. It accepts every writer's
// format (Claude Code's "…00.000Z", the atm CLI's "…33.123456789+00:00",
// this package's TimestampLayout, no fraction at all). ok is false when
// Timestamp does not parse.
func (m Message) Time() (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339Nano, m.Timestamp)
	return t, err == nil
}

// ID returns the message's id: its "message_id" (the atm CLI's and this
// package's key), else the string "msg_id" that Claude Code 2.1.332 and
// later write, else "". The file keeps whichever key it had.
func (m Message) ID() string {
	if m.MessageID != "" {
		return m.MessageID
	}
	var id string
	if raw, ok := m.Extra["msg_id"]; ok && json.Unmarshal(raw, &id) == nil {
		return id
	}
	return ""
}

// Key returns a stable identifier of the message for MarkRead: "id:" and
// ID when the message has one, otherwise "sum:" and a hash of (from,
// timestamp instant, text), which is what identifies older Claude Code
// messages without an id. Two messages with the same key are the same
// message.
func (m Message) Key() string {
	if id := m.ID(); id != "" {
		return "id:" + id
	}
	ts := m.Timestamp
	if t, ok := m.Time(); ok {
		ts = t.UTC().Format(time.RFC3339Nano)
	}
	h := sha256.New()
	for _, s := range []string{m.From, ts, m.Text} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "sum:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// IsProtocol reports whether the message is a Claude Code protocol message
// rather than mail: its text is a JSON object with a non-empty string "type"
// (idle notifications {"type":"idle_notification",…}, shutdown and plan
// approval requests and the like; see Frame). Read and Pending leave
// protocol messages out unless asked; they are not mail for a Codex agent.
func (m Message) IsProtocol() bool {
	_, ok := protocolFields(m.Text)
	return ok
}

// errNotMessage is wrapped by every decoding error of a single message.
var errNotMessage = errors.New("not an inbox message")

// UnmarshalJSON decodes one inbox element. "from", "timestamp" and "text"
// (or its alias "content") are required strings; "read" is a bool;
// "summary", "message_id" and "source_team" are strings or null. Every other
// key goes to Extra. When both "text" and "content" are present, "content"
// stays in Extra.
func (m *Message) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return fmt.Errorf("%w: not a JSON object", errNotMessage)
	}
	var out Message
	var err error
	str := func(key string, required bool) string {
		raw, ok := fields[key]
		if !ok || err != nil {
			if !ok && required && err == nil {
				err = fmt.Errorf("%w: missing %q", errNotMessage, key)
			}
			return ""
		}
		delete(fields, key)
		var s *string
		if e := json.Unmarshal(raw, &s); e != nil || (s == nil && required) {
			err = fmt.Errorf("%w: %q is not a string", errNotMessage, key)
			return ""
		}
		if s == nil {
			return ""
		}
		return *s
	}
	out.From = str("from", true)
	if _, ok := fields["text"]; ok {
		out.Text = str("text", true)
	} else if _, ok := fields["content"]; ok {
		out.Text = str("content", true)
	} else if err == nil {
		err = fmt.Errorf("%w: missing %q", errNotMessage, "text")
	}
	out.Timestamp = str("timestamp", true)
	out.SourceTeam = str("source_team", false)
	out.Summary = str("summary", false)
	out.MessageID = str("message_id", false)
	if raw, ok := fields["read"]; ok && err == nil {
		delete(fields, "read")
		var b *bool
		if e := json.Unmarshal(raw, &b); e != nil {
			err = fmt.Errorf("%w: %q is not a bool", errNotMessage, "read")
		} else if b != nil {
			out.Read = *b
		}
	}
	if err != nil {
		return err
	}
	out.Extra = fields
	*m = out
	return nil
}

// MarshalJSON encodes the message compactly, keys in this order: from,
// source_team, text, timestamp, read, summary, message_id (optional keys
// only when set), then Extra sorted by key. Strings are written as UTF-8
// without HTML escaping, like serde_json.
func (m Message) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 160+len(m.Text))
	b = append(b, '{')
	b = appendField(b, "from", m.From, true)
	b = appendField(b, "source_team", m.SourceTeam, false)
	b = appendField(b, "text", m.Text, true)
	b = appendField(b, "timestamp", m.Timestamp, true)
	b = append(b, `,"read":`...)
	b = fmt.Appendf(b, "%t", m.Read)
	b = appendField(b, "summary", m.Summary, false)
	b = appendField(b, "message_id", m.MessageID, false)
	for _, k := range slices.Sorted(maps.Keys(m.Extra)) {
		v := bytes.TrimSpace(m.Extra[k])
		if !json.Valid(v) {
			return nil, fmt.Errorf("marshal message: extra field %q is not valid JSON", k)
		}
		b = append(b, ',')
		b = appendString(b, k)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

func appendField(b []byte, key, val string, always bool) []byte {
	if val == "" && !always {
		return b
	}
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = appendString(b, key)
	b = append(b, ':')
	return appendString(b, val)
}

// appendString appends s as a JSON string the way serde_json writes it: only
// '"', '\\' and control characters are escaped; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\ufffd"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
