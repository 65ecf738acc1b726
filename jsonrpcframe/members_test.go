package jsonrpcframe

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMembers(t *testing.T) {
	obj := json.RawMessage(` { "_meta" : {"requestId": 7, "threadId":"T"}, "id":"", "msg":{"type":"agent_message","message":"a \"quoted\" }text{"}, "n": -1.5e3, "l":[1,{"x":"]"}], "k\u0065y": null } `)
	ms, ok := Members(obj)
	if !ok {
		t.Fatal("Members: not ok")
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name())
	}
	if diff := cmp.Diff([]string{"_meta", "id", "msg", "n", "l", "key"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	msg, _ := Members(Lookup(ms, "msg"))
	if s, ok := String(Lookup(msg, "message")); !ok || s != `a "quoted" }text{` {
		t.Errorf("message = %q, %v", s, ok)
	}
	if got := string(Lookup(ms, "n")); got != "-1.5e3" {
		t.Errorf("n = %s", got)
	}
	if got := string(Lookup(ms, "key")); got != "null" {
		t.Errorf("escaped key lookup = %q", got)
	}
	if Lookup(ms, "missing") != nil {
		t.Error("Lookup of a missing member is not nil")
	}
	for _, bad := range []string{`[1]`, `"s"`, ``, `{"a":1`} {
		if _, ok := Members(json.RawMessage(bad)); ok {
			t.Errorf("Members(%q) ok", bad)
		}
	}
	if _, ok := String(json.RawMessage(`7`)); ok {
		t.Error("String of a number ok")
	}
}

// FuzzMembers: on any valid JSON object Members finds every member that
// encoding/json finds, with valid keys and values.
func FuzzMembers(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":[1,"]"]},"d":"x\"y"}`))
	f.Add([]byte(` { } `))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var obj map[string]json.RawMessage
		trimmed := bytes.TrimSpace(data)
		isObj := len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(data, &obj) == nil
		ms, ok := Members(data)
		if ok != isObj {
			t.Fatalf("Members ok = %v, encoding/json object = %v", ok, isObj)
		}
		for _, m := range ms {
			if !json.Valid(m.Value) || !json.Valid(m.Key) {
				t.Fatalf("bad member %q: %q", m.Key, m.Value)
			}
			if _, found := obj[m.Name()]; !found {
				t.Fatalf("member %q not in %v", m.Name(), obj)
			}
		}
		if len(ms) < len(obj) {
			t.Fatalf("found %d of %d members", len(ms), len(obj))
		}
	})
}

// TestAppendMembersNoAlloc: splitting into a stack buffer allocates
// nothing, and the result equals Members'.
func TestAppendMembersNoAlloc(t *testing.T) {
	obj := json.RawMessage(`{"_meta":{"requestId":7},"id":"x","msg":{"type":"agent_message","message":"hi"}}`)
	want, _ := Members(obj)
	var got []Member
	allocs := testing.AllocsPerRun(100, func() {
		var buf [8]Member
		ms, ok := AppendMembers(buf[:0], obj)
		if !ok || len(ms) != 3 {
			t.Fatal("AppendMembers failed")
		}
		if string(Lookup(ms, "id")) != `"x"` {
			t.Fatal("lookup failed")
		}
	})
	got, _ = AppendMembers(nil, obj)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AppendMembers differs from Members (-want +got):\n%s", diff)
	}
	if allocs != 0 {
		t.Errorf("AppendMembers into a stack buffer allocated %v times", allocs)
	}
	if ms, ok := AppendMembers(nil, json.RawMessage(`[1]`)); ok || ms != nil {
		t.Errorf("AppendMembers of an array = %v, %v", ms, ok)
	}
}

// TestString: JSON string values decode as encoding/json decodes them;
// anything else is not a string.
func TestString(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{`"plain"`, "plain", true},
		{`""`, "", true},
		{`"line\nnext\t\"q\" \\ \/ \b\f\r"`, "line\nnext\t\"q\" \\ / \b\f\r", true},
		{`"\u00e9\u2713 and \uD83D\uDE00"`, "é✓ and 😀", true},
		{`"lone \uD83D high"`, "lone \uFFFD high", true},
		{`"lone \uDE00 low"`, "lone \uFFFD low", true},
		{`"high then escape \uD83D\n"`, "high then escape \uFFFD\n", true},
		{"\"bad \xff byte\"", "bad \uFFFD byte", true},
		{`"bad escape \q"`, "", false},
		{`"short \u12"`, "", false},
		{`5`, "", false},
		{`null`, "", false},
		{`"unterminated`, "", false},
	}
	for _, tt := range tests {
		got, ok := String([]byte(tt.in))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("String(%s) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// FuzzString checks String against encoding/json on every quoted input.
func FuzzString(f *testing.F) {
	for _, s := range []string{"a", `\n`, `\u0041`, `\uD83D\uDE00`, `\uD83D`, `\uDE00\uD83D`, "\xff", `\"`, `\x`, "\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := []byte(`"` + s + `"`)
		var want string
		err := json.Unmarshal(tok, &want)
		got, ok := String(tok)
		if ok != (err == nil) || got != want {
			t.Fatalf("String(%q) = %q, %v; encoding/json: %q, %v", tok, got, ok, want, err)
		}
	})
}

func TestSkipString(t *testing.T) {
	tests := []struct {
		in   string
		want int // index just past the string; len(in) when it does not end
	}{
		{`""`, 2},
		{`"abc",`, 5},
		{`"a\"b"x`, 6},
		{`"a\\"x`, 5},
		{`"a\\\"b"x`, 8},
		{`"\\\\"x`, 6},
		{`"é ✓ \n"`, len(`"é ✓ \n"`)},
		{`"abc`, 4},
		{`"abc\"`, 6},
		{`"abc\`, 5},
	}
	for _, tt := range tests {
		if got := skipString([]byte(tt.in), 0); got != tt.want {
			t.Errorf("skipString(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
