package jsonrpcframe

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *Message
		kind Kind
	}{
		{"request int id", `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			&Message{Versioned: true, ID: IntID(1), Method: "ping"}, KindRequest},
		{"huge integer id kept exactly", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}`,
			&Message{Versioned: true, ID: ID{raw: "123456789012345678901234567890"}, Method: "m"}, KindRequest},
		{"negative id", `{"jsonrpc":"2.0","id":-7,"method":"m","params":{}}`,
			&Message{Versioned: true, ID: IntID(-7), Method: "m", Params: json.RawMessage(`{}`)}, KindRequest},
		{"float id kept as written", `{"jsonrpc":"2.0","id":1.50,"method":"m"}`,
			&Message{Versioned: true, ID: ID{raw: "1.50"}, Method: "m"}, KindRequest},
		{"string id", `{"jsonrpc":"2.0","id":"req-abc","method":"tools/call","params":{"name":"codex"}}`,
			&Message{Versioned: true, ID: StringID("req-abc"), Method: "tools/call", Params: json.RawMessage(`{"name":"codex"}`)}, KindRequest},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			&Message{Versioned: true, Method: "notifications/initialized"}, KindNotification},
		{"response with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
			&Message{Versioned: true, ID: NullID(), Error: json.RawMessage(`{"code":-32700,"message":"x"}`)}, KindResponse},
		{"app-server: no jsonrpc, extra member kept", `{"method":"turn/started","params":{"a":1},"emittedAtMs":17}`,
			&Message{Method: "turn/started", Params: json.RawMessage(`{"a":1}`), Extra: map[string]json.RawMessage{"emittedAtMs": json.RawMessage(`17`)}}, KindNotification},
		{"raw members keep their bytes", "{ \"id\" : 3 , \"result\" : { \"b\" : [1, 2] } }",
			&Message{ID: IntID(3), Result: json.RawMessage(`{ "b" : [1, 2] }`)}, KindResponse},
		{"escaped key and method", `{"jsonrpc":"2.0","\u0069d":4,"method":"a\/b"}`,
			&Message{Versioned: true, ID: IntID(4), Method: "a/b"}, KindRequest},
		{"whitespace around", " \t{\"id\":1,\"result\":null}\r\n",
			&Message{ID: IntID(1), Result: json.RawMessage(`null`)}, KindResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(ID{})); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
			if got.Kind() != tt.kind {
				t.Errorf("Kind() = %v, want %v", got.Kind(), tt.kind)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   error
		wantID ID
		code   int64
	}{
		{"not JSON", `hello`, ErrParse, ID{}, CodeParseError},
		{"truncated", `{"jsonrpc":"2.0","id":1`, ErrParse, ID{}, CodeParseError},
		{"two values", `{"id":1,"result":1}{"id":2,"result":2}`, ErrParse, ID{}, CodeParseError},
		{"NUL byte", "{\"id\":1,\x00\"result\":1}", ErrParse, ID{}, CodeParseError},
		{"empty", "   ", ErrParse, ID{}, CodeParseError},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`, ErrBatch, ID{}, CodeInvalidRequest},
		{"scalar", `42`, ErrInvalid, ID{}, CodeInvalidRequest},
		{"empty object", `{}`, ErrInvalid, ID{}, CodeInvalidRequest},
		{"id is an object", `{"jsonrpc":"2.0","id":{},"method":"m"}`, ErrInvalid, ID{}, CodeInvalidRequest},
		{"bad version keeps id", `{"jsonrpc":"1.0","id":9,"method":"m"}`, ErrInvalid, IntID(9), CodeInvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":9,"method":5}`, ErrInvalid, IntID(9), CodeInvalidRequest},
		{"method with result", `{"jsonrpc":"2.0","id":9,"method":"m","result":{}}`, ErrInvalid, IntID(9), CodeInvalidRequest},
		{"result and error", `{"jsonrpc":"2.0","id":9,"result":{},"error":{}}`, ErrInvalid, IntID(9), CodeInvalidRequest},
		{"neither method nor id", `{"jsonrpc":"2.0","result":{}}`, ErrInvalid, ID{}, CodeInvalidRequest},
		{"scalar params", `{"jsonrpc":"2.0","id":"x","method":"m","params":3}`, ErrInvalid, StringID("x"), CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse error = %v, want %v", err, tt.want)
			}
			var me *MessageError
			if !errors.As(err, &me) {
				t.Fatalf("error %T is not a *MessageError", err)
			}
			if me.ID != tt.wantID {
				t.Errorf("ID = %q, want %q", me.ID, tt.wantID)
			}
			if me.Code() != tt.code {
				t.Errorf("Code() = %d, want %d", me.Code(), tt.code)
			}
			resp := me.Response()
			if resp.Kind() != KindResponse || resp.Err() == nil || resp.Err().Code != tt.code {
				t.Errorf("Response() = %+v, want an error response with code %d", resp, tt.code)
			}
		})
	}
}

func TestBatchElements(t *testing.T) {
	_, err := Parse([]byte(`[{"jsonrpc":"2.0","id":1,"method":"a"}, 7]`))
	var me *MessageError
	if !errors.As(err, &me) || !errors.Is(err, ErrBatch) {
		t.Fatalf("err = %v, want a batch error", err)
	}
	want := []json.RawMessage{json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"a"}`), json.RawMessage(`7`)}
	if diff := cmp.Diff(want, me.Elements); diff != "" {
		t.Errorf("Elements (-want +got):\n%s", diff)
	}
}

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   *Message
		want string
	}{
		{"request", &Message{Versioned: true, ID: IntID(1), Method: "ping"}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"no version is not added", &Message{ID: IntID(2), Result: json.RawMessage(`{}`)}, `{"id":2,"result":{}}`},
		{"extras sorted after standard members", &Message{Method: "x", Extra: map[string]json.RawMessage{"z": json.RawMessage(`1`), "a": json.RawMessage(`"s"`)}},
			`{"method":"x","a":"s","z":1}`},
		{"method escaping without HTML escapes", &Message{Versioned: true, Method: "a<b>&\"\n\x01"}, `{"jsonrpc":"2.0","method":"a<b>&\"\n\u0001"}`},
		{"string id", &Message{Versioned: true, ID: StringID("r\"1"), Error: json.RawMessage(`{"code":1,"message":"m"}`)},
			`{"jsonrpc":"2.0","id":"r\"1","error":{"code":1,"message":"m"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.MarshalJSON() // json.Marshal would re-escape <>&
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s\nwant       %s", got, tt.want)
			}
			back, err := Parse(got)
			if err != nil {
				t.Fatalf("Parse(Marshal) = %v", err)
			}
			if diff := cmp.Diff(tt.in, back, cmp.AllowUnexported(ID{})); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConstructors(t *testing.T) {
	req, err := NewRequest(StringID("a"), "tools/call", map[string]any{"name": "codex"})
	if err != nil {
		t.Fatal(err)
	}
	note, err := NewNotification("notifications/cancelled", json.RawMessage(`{"requestId":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := NewResponse(IntID(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	errResp := NewErrorResponse(ID{}, &Error{Code: CodeMethodNotFound, Message: "method not found: x", Data: json.RawMessage(`{"method":"x"}`)})
	got := []string{}
	for _, m := range []*Message{req, note, resp, errResp} {
		b, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Kind().String()+" "+string(b))
	}
	want := []string{
		`request {"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"codex"}}`,
		`notification {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`response {"jsonrpc":"2.0","id":5,"result":{}}`,
		`response {"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"method not found: x","data":{"method":"x"}}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := NewRequest(IntID(1), "m", json.RawMessage(`{bad`)); err == nil {
		t.Error("NewRequest with invalid raw params: no error")
	}
	if e := errResp.Err(); !errors.Is(e, &Error{Code: CodeMethodNotFound}) {
		t.Errorf("Err() = %v, want code %d", e, CodeMethodNotFound)
	}
}

func TestID(t *testing.T) {
	if id := IntID(-3); id.String() != "-3" || id.IsString() || id.IsNull() || id.IsZero() {
		t.Errorf("IntID(-3) = %#v", id)
	}
	if n, ok := IntID(42).Int64(); !ok || n != 42 {
		t.Errorf("Int64 = %d, %v", n, ok)
	}
	if s, ok := StringID("x").Str(); !ok || s != "x" {
		t.Errorf("Str = %q, %v", s, ok)
	}
	if _, ok := (ID{raw: "123456789012345678901234567890"}).Int64(); ok {
		t.Error("Int64 of a huge id reported ok")
	}
	for _, bad := range []string{"", "{}", "[1]", "true", "nope"} {
		if _, err := ParseID([]byte(bad)); err == nil {
			t.Errorf("ParseID(%q): no error", bad)
		}
	}
	ids := map[ID]int{IntID(1): 1, StringID("1"): 2}
	if len(ids) != 2 {
		t.Error("IntID(1) and StringID(\"1\") collide as map keys")
	}
}
