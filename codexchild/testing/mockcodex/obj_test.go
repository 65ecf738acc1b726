package mockcodex

import (
	"bytes"
	"encoding/json"
	"testing"
)

// refJSON is what the mock wrote before appendJSON: objects in order, every
// other value through encoding/json without HTML escaping.
func refJSON(t *testing.T, v any) []byte {
	t.Helper()
	switch x := v.(type) {
	case obj:
		var b bytes.Buffer
		b.WriteByte('{')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(refJSON(t, e.k))
			b.WriteByte(':')
			b.Write(refJSON(t, e.v))
		}
		b.WriteByte('}')
		return b.Bytes()
	case []any:
		if x == nil {
			return []byte("null")
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(refJSON(t, e))
		}
		b.WriteByte(']')
		return b.Bytes()
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestAppendJSON: appendJSON writes the bytes the mock wrote through
// encoding/json, for every kind of value the mock sends.
func TestAppendJSON(t *testing.T) {
	values := []any{
		nil, true, false, 0, -42, int64(1) << 40, 1.5, 1e21, "",
		"plain", "say \"hi\"\\n\n\t\r\x01", "<session-context> & more", "line\u2028sep\u2029", "bad \xff byte", "héllo ✓ 😀",
		[]any(nil), []any{}, []any{1, "two", nil, obj{}}, []string{"a", "b"}, map[string]any{"z": 1, "a": []any{true}},
		json.RawMessage(`{ "spaced" : [1, 2] }`),
		o("type", "task_started", "turn_id", "019a", "started_at", int64(1700000000), "model_context_window", 258400),
		o("_meta", o("requestId", json.RawMessage("7"), "threadId", "t"), "id", "", "msg",
			o("type", "agent_message", "message", "MOCK_REPLY: <x>\n", "phase", nil, "items", []any{o("k", 1.25)})),
	}
	for _, v := range values {
		got, err := appendJSON([]byte("x"), v)
		if err != nil {
			t.Fatalf("appendJSON(%#v): %v", v, err)
		}
		if want := append([]byte("x"), refJSON(t, v)...); !bytes.Equal(got, want) {
			t.Errorf("appendJSON(%#v)\n got  %s\n want %s", v, got, want)
		}
	}
}
