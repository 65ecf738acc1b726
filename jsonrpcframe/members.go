package jsonrpcframe

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A Member is one top-level member of a JSON object, as raw bytes: Key is
// the key's JSON string token (with its quotes), Value the value's JSON text.
type Member struct {
	Key   []byte
	Value []byte
}

// Name returns the member's key as a Go string.
func (m Member) Name() string { return keyString(m.Key) }

// Members splits a JSON object into its top-level members without decoding
// them, in one scan and with one allocation: what a proxy needs to read a
// few fields of a large message or to change one member and keep every
// other byte. obj must be valid JSON (a Message's Params, Result and Error
// are); for anything that is not an object Members returns nil, false.
func Members(obj json.RawMessage) ([]Member, bool) {
	return AppendMembers(make([]Member, 0, 8), obj)
}

// AppendMembers is [Members] appending to dst, for a caller that splits
// many messages and wants no allocation: with a dst backed by an array on
// its stack, splitting an object of up to cap(dst) members allocates
// nothing. On failure it returns nil, false.
func AppendMembers(dst []Member, obj json.RawMessage) ([]Member, bool) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	out := dst
	i = skipWS(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		kEnd := skipString(obj, i)
		key := obj[i:kEnd:kEnd]
		i = skipWS(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = skipWS(obj, i+1)
		if i >= len(obj) {
			return nil, false
		}
		vEnd := skipValue(obj, i)
		out = append(out, Member{Key: key, Value: obj[i:vEnd:vEnd]})
		i = skipWS(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipWS(obj, i+1)
		}
	}
	return out, i < len(obj) && obj[i] == '}'
}

// Lookup returns the value of the member named name, or nil.
func Lookup(members []Member, name string) json.RawMessage {
	for _, m := range members {
		if len(m.Key) == len(name)+2 && string(m.Key[1:len(m.Key)-1]) == name {
			return json.RawMessage(m.Value)
		}
	}
	for _, m := range members { // keys written with escapes
		if bytes.IndexByte(m.Key, '\\') >= 0 && m.Name() == name {
			return json.RawMessage(m.Value)
		}
	}
	return nil
}

// String returns the Go string of a JSON string value, and false for
// anything else.
func String(v json.RawMessage) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}
