package sshhost

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"codex", "codex"},
		{"/usr/local/bin/codex-0.171", "/usr/local/bin/codex-0.171"},
		{"app-server", "app-server"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
		{"~/x", "'~/x'"},
		{"A=1", "'A=1'"},
		{"*", "'*'"},
		{"line\nbreak", "'line\nbreak'"},
		{"{a,b}", "'{a,b}'"},
		{"-", "-"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// shells are the POSIX shells here that a host's login shell may be.
func shells(t testing.TB) []string {
	var out []string
	for _, sh := range []string{"/bin/sh", "/bin/bash", "/bin/dash", "/bin/zsh", "/bin/ksh"} {
		if _, err := exec.LookPath(sh); err == nil {
			out = append(out, sh)
		}
	}
	if len(out) == 0 {
		t.Skip("no POSIX shell here")
	}
	return out
}

// echoWords is a command line that prints each of its words followed by
// a NUL: what the shell made of the quoted words.
func echoWords(words ...string) string { return `printf '%s\0' ` + Join(words...) }

func splitNUL(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimSuffix(b, []byte{0})), "\x00")
}

func TestJoinRoundTrip(t *testing.T) {
	words := []string{"", "plain", "two words", "it's", `back\slash`, `"double"`, "$(id)", "`id`", "a;b|c&d", "*?[x]", "~", "tab\there", "new\nline", "!bang", "#hash", "é ünïcode", "'", "''", "=", "-n"}
	for _, sh := range shells(t) {
		out, err := exec.Command(sh, "-c", echoWords(words...)).Output()
		if err != nil {
			t.Fatalf("%s: %v", sh, err)
		}
		if diff := cmp.Diff(words, splitNUL(out)); diff != "" {
			t.Errorf("%s split the joined words differently (-want +got):\n%s", sh, diff)
		}
	}
}

// FuzzQuote: every word without a NUL comes back from every shell as it
// was quoted.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a", "it's", "$HOME", "\n", "'\\''", "a b\tc", "\xff\xfe"} {
		f.Add(s)
	}
	sh := shells(f)
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "\x00") {
			t.Skip("a command line cannot carry NUL")
		}
		for _, sh := range sh {
			out, err := exec.Command(sh, "-c", echoWords(s, "end")).Output()
			if err != nil {
				t.Fatalf("%s -c %q: %v", sh, echoWords(s, "end"), err)
			}
			if diff := cmp.Diff([]string{s, "end"}, splitNUL(out)); diff != "" {
				t.Fatalf("%s: Quote(%q) = %q came back different (-want +got):\n%s", sh, s, Quote(s), diff)
			}
		}
	})
}
