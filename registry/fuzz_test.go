package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzDecodeFile checks that any registry file that parses survives an
// encode/decode round trip unchanged.
func FuzzDecodeFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"sessions":[]}`))
	f.Add([]byte(`{"version":1,"x":{"y":[1,"2"]},"sessions":[{"agent_id":"codex-1","backend_id":null,"status":"busy","started_at":"2026-02-17T10:00:00Z","extra":{"a":1}}]}`))
	f.Add([]byte(`{"sessions":null}`))
	f.Add([]byte(`{"version":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeFile(data)
		if err != nil {
			return
		}
		out, err := encodeFile(st, nil)
		if err != nil {
			// Only times outside RFC 3339's year range cannot be written.
			return
		}
		back, err := decodeFile(out)
		if err != nil {
			t.Fatalf("re-decode of\n%s\nfailed: %v", out, err)
		}
		if diff := cmp.Diff(st.sessions, back.sessions, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("sessions changed by a round trip (-first +second):\n%s", diff)
		}
		if len(st.extra) != len(back.extra) {
			t.Fatalf("top-level extras %d, after round trip %d", len(st.extra), len(back.extra))
		}
	})
}

// FuzzRedact checks that redaction is idempotent and keeps valid UTF-8
// valid.
func FuzzRedact(f *testing.F) {
	for _, s := range plantedSecrets {
		f.Add(s.text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := Redact(s)
		if full := redact(s, false); full != once {
			t.Fatalf("the hints skipped a rule that matches: Redact(%q) = %q, every rule gives %q", s, once, full)
		}
		if twice := Redact(once); twice != once {
			t.Fatalf("Redact not idempotent: %q -> %q -> %q", s, once, twice)
		}
		if cut := truncateRunes(once, SummaryLimit); len(cut) > len(once) {
			t.Fatalf("truncate grew the string")
		}
	})
}
