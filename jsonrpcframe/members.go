package jsonrpcframe

import (
	"bytes"
	"encoding/json"
	"unicode/utf16"
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
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return unquote(inner)
		}
	}
	if utf8.Valid(inner) {
		return string(inner), true
	}
	return unquote(inner)
}

// unquote decodes the inside of a JSON string token as encoding/json does:
// escapes resolved, a surrogate pair joined, a lone surrogate and each
// invalid UTF-8 byte replaced by U+FFFD. It reports false for text that is
// not the inside of a JSON string.
func unquote(s []byte) (string, bool) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(s[i:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if d := utf16.DecodeRune(r, hex4(s[i:])); d != utf8.RuneError {
						b = utf8.AppendRune(b, d)
						i += 6
						continue
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c == '"' || c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			j := i + 1 // the run of plain ASCII goes in one copy
			for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '\\' && s[j] != '"' {
				j++
			}
			b = append(b, s[i:j]...)
			i = j
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
	}
	return string(b), true
}

// hex4 reads the rune of a \uXXXX escape at the start of s, or -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
