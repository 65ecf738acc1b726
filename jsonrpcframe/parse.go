package jsonrpcframe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
	"unsafe"
)

// Parse parses one JSON-RPC message from data, which may be surrounded by
// white space. The message does not retain data. A failure is a
// *MessageError wrapping ErrParse (not JSON), ErrBatch (a JSON array) or
// ErrInvalid (JSON that is not a JSON-RPC message).
func Parse(data []byte) (*Message, error) {
	return parse(data, false)
}

// parse parses data; when owned is true the message may keep data.
func parse(data []byte, owned bool) (*Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, &MessageError{Err: ErrParse, Detail: "empty message"}
	}
	switch data[0] {
	case '{':
	case '[':
		if !validJSON(data) {
			return nil, notJSON(data)
		}
		var elems []json.RawMessage
		_ = json.Unmarshal(data, &elems) // valid JSON array: cannot fail
		return nil, &MessageError{Err: ErrBatch, Detail: fmt.Sprintf("batch of %d", len(elems)),
			Raw: append([]byte(nil), data...), Elements: elems, Size: int64(len(data))}
	default:
		if !validJSON(data) {
			return nil, notJSON(data)
		}
		return nil, &MessageError{Err: ErrInvalid, Detail: "not a JSON object", Raw: cut(data), Size: int64(len(data))}
	}
	// One pass checks the JSON and splits the object into its members.
	var spanBuf [8]memberSpan
	spans, ok := splitObject(data, spanBuf[:0])
	if !ok {
		return nil, notJSON(data)
	}
	buf := data
	if !owned {
		buf = append([]byte(nil), data...)
	}
	m := &Message{}
	var hasParams, hasResult, hasError, hasID bool
	invalid := func(format string, args ...any) error {
		return &MessageError{Err: ErrInvalid, Detail: fmt.Sprintf(format, args...), ID: m.ID, Raw: cut(buf), Size: int64(len(buf))}
	}
	if len(spans) == 0 {
		return nil, invalid("empty object")
	}
	var problem string
	for _, sp := range spans {
		rawKey := buf[sp.key:sp.keyEnd]
		val := json.RawMessage(buf[sp.val:sp.valEnd:sp.valEnd])
		switch memberName(rawKey) {
		case "jsonrpc":
			if string(val) != `"2.0"` {
				problem = fmt.Sprintf(`jsonrpc member is %s, not "2.0"`, val)
			}
			m.Versioned = true
		case "id":
			id, err := ParseID(val)
			if err != nil {
				problem = "id is not a number, string or null"
			} else {
				m.ID = id
				hasID = true
			}
		case "method":
			if len(val) == 0 || val[0] != '"' {
				problem = "method is not a string"
				break
			}
			m.Method = methodName(val)
			if m.Method == "" {
				problem = "method is empty"
			}
		case "params":
			m.Params, hasParams = val, true
		case "result":
			m.Result, hasResult = val, true
		case "error":
			m.Error, hasError = val, true
		default:
			if m.Extra == nil {
				m.Extra = make(map[string]json.RawMessage)
			}
			m.Extra[keyString(rawKey)] = val
		}
	}
	switch {
	case problem != "":
		return nil, invalid("%s", problem)
	case m.Method != "" && (hasResult || hasError):
		return nil, invalid("a message with a method has a result or an error")
	case m.Method == "" && !hasID:
		return nil, invalid("neither a method nor an id")
	case m.Method == "" && hasResult == hasError:
		return nil, invalid("a response needs exactly one of result and error")
	case hasParams && len(m.Params) > 0 && m.Params[0] != '{' && m.Params[0] != '[' && string(m.Params) != "null":
		return nil, invalid("params is neither an object nor an array")
	}
	return m, nil
}

// memberName returns the name of a member's key token for matching it
// against the JSON-RPC member names: the raw text between the quotes when
// it has no escape (no copy is made: the result must not be kept), else the
// decoded key.
func memberName(tok []byte) string {
	inner := tok[1 : len(tok)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return unsafeString(inner)
	}
	return keyString(tok)
}

// commonMethods are returned without allocating: every message of a Codex
// session carries one of them.
var commonMethods = map[string]string{}

func init() {
	for _, m := range []string{"codex/event", "tools/call", "tools/list", "initialize", "notifications/initialized",
		"notifications/progress", "notifications/cancelled", "notifications/message", "elicitation/create", "ping",
		"item/started", "item/completed", "item/agentMessage/delta", "turn/started", "turn/completed",
		"thread/started", "thread/tokenUsage/updated", "account/rateLimits/updated", "turn/start", "thread/start"} {
		commonMethods[m] = m
	}
}

// methodName returns the method of a message, shared when it is a common one.
func methodName(tok []byte) string {
	if m, ok := commonMethods[unsafeString(tok[1:len(tok)-1])]; ok {
		return m
	}
	return keyString(tok)
}

// keyString returns the Go string of a JSON string token; invalid UTF-8
// becomes U+FFFD as in encoding/json.
func keyString(tok []byte) string {
	inner := tok[1 : len(tok)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(tok, &s) // valid JSON string: cannot fail
	return s
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the JSON string starting at b[i]
// (len(b) when it does not end). It jumps from quote to quote with
// bytes.IndexByte, which is vectorised: Codex events are mostly long
// strings, and every split of a message skips them.
func skipString(b []byte, i int) int {
	first := i + 1
	for i = first; ; i++ {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		// The quote ends the string unless it is escaped: preceded by an
		// odd number of backslashes (each pair is one escaped backslash).
		k := i
		for k > first && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
	}
}

// skipValue returns the index just past the JSON value starting at b[i]; b
// is known to be valid JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// memberSpan locates one member of an object: key token and value text.
type memberSpan struct{ key, keyEnd, val, valEnd int }

// splitObject checks that data (starting with '{') is one valid JSON object
// with nothing after it but white space, and appends the spans of its
// members to spans.
func splitObject(data []byte, spans []memberSpan) ([]memberSpan, bool) {
	i := skipWS(data, 1)
	if i < len(data) && data[i] == '}' {
		return spans, skipWS(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, false
		}
		kEnd := scanString(data, i)
		if kEnd < 0 {
			return nil, false
		}
		j := skipWS(data, kEnd)
		if j >= len(data) || data[j] != ':' {
			return nil, false
		}
		v := skipWS(data, j+1)
		vEnd := scanValue(data, v)
		if vEnd < 0 {
			return nil, false
		}
		spans = append(spans, memberSpan{i, kEnd, v, vEnd})
		i = skipWS(data, vEnd)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case '}':
			return spans, skipWS(data, i+1) == len(data)
		case ',':
			i = skipWS(data, i+1)
		default:
			return nil, false
		}
	}
}

// notJSON is the error for data that is not valid JSON.
func notJSON(data []byte) error {
	return &MessageError{Err: ErrParse, Detail: "not valid JSON", Raw: cut(data), Size: int64(len(data))}
}

// unsafeString views b as a string without copying; the string must not
// outlive b or be kept.
func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
