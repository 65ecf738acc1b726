package mockcodex

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// obj is a JSON object that keeps its key order, so the mock writes members
// in the order Codex does (not significant in JSON, but easier to compare
// with the transcripts by eye).
type obj []kv

type kv struct {
	k string
	v any
}

// o builds an obj from alternating keys and values.
func o(pairs ...any) obj {
	m := make(obj, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m = append(m, kv{pairs[i].(string), pairs[i+1]})
	}
	return m
}

// with returns a copy of m with more members (replacing existing keys).
func (m obj) with(pairs ...any) obj {
	out := append(obj(nil), m...)
	for i := 0; i+1 < len(pairs); i += 2 {
		k := pairs[i].(string)
		replaced := false
		for j := range out {
			if out[j].k == k {
				out[j].v = pairs[i+1]
				replaced = true
			}
		}
		if !replaced {
			out = append(out, kv{k, pairs[i+1]})
		}
	}
	return out
}

// MarshalJSON writes the members in order, without HTML escaping.
func (m obj) MarshalJSON() ([]byte, error) { return appendJSON(nil, m) }

// marshal is json.Marshal without HTML escaping and without the newline.
func marshal(v any) ([]byte, error) { return appendJSON(nil, v) }

// appendJSON appends v as marshal writes it. Objects, lists, strings,
// integers, booleans and null are written here: every event goes through
// it, and encoding/json would compact the output of each nested obj's
// MarshalJSON again, level by level. Anything else is encoding/json's.
func appendJSON(b []byte, v any) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case obj:
		b = append(b, '{')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e.k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendJSON(b, e.v); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case string:
		if !strings.Contains(x, "\u2028") && !strings.Contains(x, "\u2029") { // encoding/json escapes these two
			return jsonrpcframe.AppendString(b, x), nil
		}
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

func mustMarshal(v any) json.RawMessage {
	b, err := marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func nowMs() int64 { return time.Now().UnixMilli() }

// strs makes a []any of strings, so an empty list marshals as [].
func strs(s ...string) []any {
	out := make([]any, 0, len(s))
	for _, x := range s {
		out = append(out, x)
	}
	return out
}

// get returns the value of key k.
func (m obj) get(k string) any {
	for _, e := range m {
		if e.k == k {
			return e.v
		}
	}
	return nil
}
