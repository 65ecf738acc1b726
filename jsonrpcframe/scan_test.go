package jsonrpcframe

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are inputs where a scanner is easy to get wrong; each is
// checked against json.Valid, which is the definition of valid here.
var validCases = []struct {
	name string
	in   string
}{
	{"empty", ""},
	{"space only", " \t\r\n"},
	{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
	{"empty containers", `{"a":{},"b":[],"c":[{}],"d":[[]]}`},
	{"space everywhere", " { \"a\" : [ 1 , 2 ] , \"b\" : { } } \n"},
	{"trailing garbage", `{"a":1}x`},
	{"two values", `{} {}`},
	{"trailing comma object", `{"a":1,}`},
	{"trailing comma array", `[1,]`},
	{"missing colon", `{"a" 1}`},
	{"missing value", `{"a":}`},
	{"unquoted key", `{a:1}`},
	{"mismatched close", `{"a":[1}`},
	{"mismatched close 2", `[{"a":1]]`},
	{"unclosed", `{"a":[1,2`},
	{"unclosed string", `{"a":"abc`},
	{"numbers", `[0,-0,1,-1,10,1.5,-1.5e10,1E+2,1e-2,0.0]`},
	{"leading zero", `[01]`},
	{"bare minus", `[-]`},
	{"dot no digits", `[1.]`},
	{"exponent no digits", `[1e]`},
	{"plus sign", `[+1]`},
	{"leading dot", `[.5]`},
	{"literals", `[true,false,null]`},
	{"bad literal", `[tru]`},
	{"literal with tail", `[truex]`},
	{"top-level literal", `null`},
	{"top-level string", `"x"`},
	{"escapes", `["\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00"]`},
	{"bad escape", `["\x"]`},
	{"short unicode escape", `["\u12"]`},
	{"bad hex", `["\u12g4"]`},
	{"escape at end", `["\`},
	{"control character", "[\"a\x01b\"]"},
	{"tab in string", "[\"a\tb\"]"},
	{"del and high bytes", "[\"\x7f\x80\xff\xc3\xa9\"]"},
	{"invalid utf-8 accepted", "[\"\xff\xfe\"]"},
	{"long plain string", `["` + strings.Repeat("abcdefgh", 20) + `"]`},
	{"quote in 8-byte block", `["abcdefg\"hijklmnop"]`},
	{"backslash in 8-byte block", `["abcdefg\\hijklmnop"]`},
	{"control in 8-byte block", "[\"abcdefg\x1fhijklmnop\"]"},
	{"control after high byte", "[\"\xffabcdef\x1fhijklmnop\"]"},
	{"space (0x20) in block", `["        x       "]`},
	{"nul in string", "[\"abcdefgh\x00\"]"},
	{"deep but allowed", strings.Repeat("[", 10000) + strings.Repeat("]", 10000)},
	{"too deep", strings.Repeat("[", 10001) + strings.Repeat("]", 10001)},
	{"too deep empty object", strings.Repeat("[", 10000) + "{}" + strings.Repeat("]", 10000)},
	{"form feed is not space", "\f{}"},
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := validJSON([]byte(tc.in)), json.Valid([]byte(tc.in)); got != want {
				t.Errorf("validJSON(%.60q) = %v, want %v", tc.in, got, want)
			}
		})
	}
}

// TestPlain8 checks the 8-byte test against the byte table for every byte
// value at every position of a block.
func TestPlain8(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			block := []byte("abcdefgh")
			block[pos] = byte(c)
			var x uint64
			for i := 7; i >= 0; i-- {
				x = x<<8 | uint64(block[i])
			}
			if got, want := plain8(x), strPlain[c]; got != want {
				t.Fatalf("plain8 with byte %#x at %d = %v, want %v", c, pos, got, want)
			}
		}
	}
}

// BenchmarkValid compares the scanner with json.Valid on a Codex-like
// event of mostly string content.
func BenchmarkValid(b *testing.B) {
	ev := []byte(`{"jsonrpc":"2.0","method":"codex/event","params":{"_meta":{"requestId":2,"threadId":"01a20035-0a7e-755f-a01f-e0f48db6f60f"},"id":"01a20035-0a7f-72a1-aa29-13b368fd3207","msg":{"type":"agent_message","message":"` +
		strings.Repeat("Ran the tests; all pass. ", 20) + `","phase":null}}}`)
	for _, v := range []struct {
		name string
		fn   func([]byte) bool
	}{{"scanner", validJSON}, {"encoding-json", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(ev)))
			for b.Loop() {
				if !v.fn(ev) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
