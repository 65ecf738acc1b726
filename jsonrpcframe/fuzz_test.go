package jsonrpcframe

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var fuzzSeeds = []string{
	ping + "\n",
	"Content-Length: 40\r\n\r\n" + ping,
	`{"id":"x","result":{"a":[1,2,{"b":null}]},"emittedAtMs":1}`,
	`[{"jsonrpc":"2.0","id":1,"method":"a"}]`,
	"{\"method\":\"a\\u0000\\\"b\",\"params\":[\"\\ud800\"]}\r\n\r\n",
	"content-length: 5\n\n{}{}{",
	"\x00\xff{\n",
}

// FuzzReaders: no input makes a reader panic or loop without consuming
// input, in either framing.
func FuzzReaders(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, r := range []Reader{
			NewLineReader(bytes.NewReader(data), &Options{MaxMessageSize: 256}),
			NewHeaderReader(bytes.NewReader(data), &Options{MaxMessageSize: 256}),
		} {
			for i := 0; ; i++ {
				if i > len(data)+2 {
					t.Fatalf("more results than input bytes")
				}
				_, err := r.Read()
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					break
				}
				var me *MessageError
				if err != nil && !errors.As(err, &me) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
			}
		}
	})
}

// FuzzRoundTrip: whatever parses is written by both writers and reads back
// equal.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		for _, framing := range []string{"line", "header"} {
			var buf bytes.Buffer
			var w Writer = NewLineWriter(&buf)
			if framing == "header" {
				w = NewHeaderWriter(&buf)
			}
			if err := w.Write(m); err != nil {
				t.Fatalf("%s: Write: %v", framing, err)
			}
			r, _ := NewAuto(&buf, io.Discard, nil)
			back, err := r.Read()
			if err != nil {
				t.Fatalf("%s: read back %q: %v", framing, buf.String(), err)
			}
			if diff := cmp.Diff(m, back, cmp.AllowUnexported(ID{})); diff != "" {
				t.Fatalf("%s: round trip (-want +got):\n%s", framing, diff)
			}
		}
	})
}

// FuzzValid: the package's scanner accepts exactly what json.Valid accepts.
func FuzzValid(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range validCases {
		f.Add([]byte(s.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", data, got, want)
		}
	})
}
