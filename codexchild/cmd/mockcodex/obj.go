package main

import (
	"bytes"
	"encoding/json"
	"time"
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
func (m obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := marshal(e.k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping and without the newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
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
