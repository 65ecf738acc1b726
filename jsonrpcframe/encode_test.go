package jsonrpcframe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendString(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", `""`},
		{"plain", `"plain"`},
		{`say "hi"\now`, `"say \"hi\"\\now"`},
		{"line\nnext\r\ttab", `"line\nnext\r\ttab"`},
		{"\x00\x1f", `"\u0000\u001f"`},
		{"<session-context> & more", `"<session-context> & more"`},
		{"héllo ✓", `"héllo ✓"`},
		{"bad \xff byte", `"bad \ufffd byte"`},
	}
	for _, tt := range tests {
		got := string(AppendString([]byte("x:"), tt.in))
		if want := "x:" + tt.want; got != want {
			t.Errorf("AppendString(%q) = %s, want %s", tt.in, got, want)
		}
	}
}

// FuzzAppendString checks that the output is one valid JSON string that
// decodes to the input (invalid UTF-8 replaced, as encoding/json does).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\\", "\n\x01", "<>&", "\u2028", "\xff\xfe", strings.Repeat("é", 10)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		if !json.Valid(b) {
			t.Fatalf("AppendString(%q) = %s: not valid JSON", s, b)
		}
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		// Each invalid byte becomes U+FFFD, as with encoding/json.
		var want strings.Builder
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			want.WriteRune(r)
			i += n
		}
		if got != want.String() {
			t.Fatalf("AppendString(%q) decodes to %q, want %q", s, got, want.String())
		}
	})
}
