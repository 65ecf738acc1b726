package jsonrpcframe

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// An ID is a JSON-RPC request id kept exactly as it was sent: a JSON number
// of any size or sign, a JSON string or null. The zero ID means "absent" (a
// notification). IDs are comparable and can be used as map keys; two ids are
// equal when their JSON text is equal.
type ID struct {
	raw string
}

// IntID returns the id for the integer n.
func IntID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// StringID returns the id for the string s.
func StringID(s string) ID { return ID{raw: string(AppendString(nil, s))} }

// NullID returns the null id, used in error responses when the request id
// could not be determined.
func NullID() ID { return ID{raw: "null"} }

// ParseID returns the id whose JSON text is raw. raw must be a JSON number, a
// JSON string or null.
func ParseID(raw []byte) (ID, error) {
	if len(raw) == 0 {
		return ID{}, fmt.Errorf("jsonrpcframe: parse id: empty")
	}
	if !validJSON(raw) {
		return ID{}, fmt.Errorf("jsonrpcframe: parse id: %q is not JSON", raw)
	}
	switch c := raw[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9', string(raw) == "null":
		return ID{raw: string(raw)}, nil
	}
	return ID{}, fmt.Errorf("jsonrpcframe: parse id: %s is not a number, string or null", raw)
}

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// IsNull reports whether the id is present and null.
func (id ID) IsNull() bool { return id.raw == "null" }

// IsString reports whether the id is a JSON string.
func (id ID) IsString() bool { return len(id.raw) > 0 && id.raw[0] == '"' }

// Raw returns the id's JSON text, or nil when the id is absent.
func (id ID) Raw() json.RawMessage {
	if id.raw == "" {
		return nil
	}
	return json.RawMessage(id.raw)
}

// String returns the id's JSON text ("" when absent), suitable for logs.
func (id ID) String() string { return id.raw }

// Int64 returns the id as an int64 when it is a JSON integer that fits.
func (id ID) Int64() (int64, bool) {
	if id.raw == "" || id.raw[0] == '"' {
		return 0, false
	}
	n, err := strconv.ParseInt(id.raw, 10, 64)
	return n, err == nil
}

// Str returns the id as a Go string when it is a JSON string.
func (id ID) Str() (string, bool) {
	if !id.IsString() {
		return "", false
	}
	var s string
	if err := json.Unmarshal([]byte(id.raw), &s); err != nil {
		return "", false
	}
	return s, true
}

// MarshalJSON returns the id's JSON text; an absent id marshals as null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON sets the id from its JSON text.
func (id *ID) UnmarshalJSON(b []byte) error {
	v, err := ParseID(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}
