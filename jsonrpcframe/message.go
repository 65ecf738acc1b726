package jsonrpcframe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Message is one JSON-RPC 2.0 message: a request, a notification or a
// response. Members the proxy does not interpret are kept as raw JSON so that
// forwarding a message does not change them.
type Message struct {
	// Versioned reports whether "jsonrpc":"2.0" was present; when writing, the
	// member is written only if Versioned is true. The New* constructors set it.
	Versioned bool
	// ID is the request or response id; the zero ID means absent.
	ID ID
	// Method is the method of a request or notification; "" for a response.
	Method string
	// Params is the raw params value of a request or notification, or nil.
	Params json.RawMessage
	// Result is the raw result of a successful response, or nil.
	Result json.RawMessage
	// Error is the raw error object of a failed response, or nil; see Err.
	Error json.RawMessage
	// Extra holds any other top-level members (for example Codex app-server's
	// "emittedAtMs"), written back after the standard ones in key order.
	Extra map[string]json.RawMessage
}

// Kind tells requests, notifications and responses apart.
type Kind int

// The kinds of message.
const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// Kind returns what the message is: a request has a method and an id, a
// notification a method and no id, a response an id and a result or an error
// but no method.
func (m *Message) Kind() Kind {
	switch {
	case m.Method != "" && !m.ID.IsZero():
		return KindRequest
	case m.Method != "":
		return KindNotification
	case !m.ID.IsZero() && (m.Result != nil) != (m.Error != nil):
		return KindResponse
	}
	return KindInvalid
}

// IsRequest reports whether m is a request.
func (m *Message) IsRequest() bool { return m.Kind() == KindRequest }

// IsNotification reports whether m is a notification.
func (m *Message) IsNotification() bool { return m.Kind() == KindNotification }

// IsResponse reports whether m is a response.
func (m *Message) IsResponse() bool { return m.Kind() == KindResponse }

// Err decodes the error member of a response; it returns nil when there is
// none or when it is not an error object.
func (m *Message) Err() *Error {
	if m.Error == nil {
		return nil
	}
	var e Error
	if err := json.Unmarshal(m.Error, &e); err != nil {
		return nil
	}
	return &e
}

// NewRequest returns a request with the given id, method and params; params
// may be nil, a json.RawMessage or any value json.Marshal accepts.
func NewRequest(id ID, method string, params any) (*Message, error) {
	p, err := raw(params)
	if err != nil {
		return nil, fmt.Errorf("jsonrpcframe: request %s: %w", method, err)
	}
	return &Message{Versioned: true, ID: id, Method: method, Params: p}, nil
}

// NewNotification returns a notification with the given method and params.
func NewNotification(method string, params any) (*Message, error) {
	p, err := raw(params)
	if err != nil {
		return nil, fmt.Errorf("jsonrpcframe: notification %s: %w", method, err)
	}
	return &Message{Versioned: true, Method: method, Params: p}, nil
}

// NewResponse returns a successful response; a nil result is sent as {}.
func NewResponse(id ID, result any) (*Message, error) {
	r, err := raw(result)
	if err != nil {
		return nil, fmt.Errorf("jsonrpcframe: response: %w", err)
	}
	if r == nil {
		r = json.RawMessage("{}")
	}
	return &Message{Versioned: true, ID: id, Result: r}, nil
}

// NewErrorResponse returns an error response; a zero id is sent as null.
func NewErrorResponse(id ID, e *Error) *Message {
	if id.IsZero() {
		id = NullID()
	}
	b, err := json.Marshal(e)
	if err != nil { // only when Data is not valid JSON
		b, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	return &Message{Versioned: true, ID: id, Error: b}
}

func raw(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if v == nil {
			return nil, nil
		}
		if !validJSON(v) {
			return nil, fmt.Errorf("raw value is not valid JSON")
		}
		return v, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <, > and & readable, as the peers write them
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// MarshalJSON encodes the message compactly: jsonrpc, id, method, params,
// result, error, then the extra members in key order. Raw members are written
// as they are.
func (m *Message) MarshalJSON() ([]byte, error) {
	return m.AppendJSON(nil)
}

// AppendJSON appends the encoded message to b.
func (m *Message) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	first := true
	member := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendString(b, name)
		b = append(b, ':')
	}
	if m.Versioned {
		member("jsonrpc")
		b = append(b, `"2.0"`...)
	}
	if !m.ID.IsZero() {
		member("id")
		b = append(b, m.ID.raw...)
	}
	if m.Method != "" {
		member("method")
		b = AppendString(b, m.Method)
	}
	for _, f := range [...]struct {
		name string
		v    json.RawMessage
	}{{"params", m.Params}, {"result", m.Result}, {"error", m.Error}} {
		if f.v == nil {
			continue
		}
		if len(f.v) == 0 {
			return nil, fmt.Errorf("jsonrpcframe: marshal: %s is empty", f.name)
		}
		member(f.name)
		b = append(b, f.v...)
	}
	if len(m.Extra) > 0 {
		keys := make([]string, 0, len(m.Extra))
		for k := range m.Extra {
			switch k {
			case "jsonrpc", "id", "method", "params", "result", "error":
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := m.Extra[k]
			if len(v) == 0 {
				return nil, fmt.Errorf("jsonrpcframe: marshal: %s is empty", k)
			}
			member(k)
			b = append(b, v...)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON parses one message; see Parse.
func (m *Message) UnmarshalJSON(b []byte) error {
	p, err := Parse(b)
	if err != nil {
		return err
	}
	*m = *p
	return nil
}
