package atmclient

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// sameJSON compares raw JSON values ignoring insignificant white space.
var sameJSON = cmp.Comparer(func(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
})

// FuzzParseInbox: parsing any bytes never panics; every element that is a
// message survives MarshalJSON and UnmarshalJSON unchanged; an inbox that
// parses is re-encoded into one that parses to the same messages.
func FuzzParseInbox(f *testing.F) {
	for _, name := range []string{"claude_code_inbox.json", "atm_cli_inbox.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`[{"from":"a","content":"x","text":"y","timestamp":"t","read":null,"summary":null,"message_id":null,"z":[{}]}]`))
	f.Add([]byte(`[1, "x", {"from": "\u00e9\ud800", "text": "<>&\u2028", "timestamp": "2026-01-01T00:00:00Z"}]`))
	f.Add([]byte(`[{"from":"a","text":"b","timestamp":"c"},]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseEntries(data, nil)
		if err != nil {
			return
		}
		var msgs []Message
		valid := true
		for _, e := range entries {
			valid = valid && e.valid
			if e.err != nil {
				continue
			}
			msgs = append(msgs, e.msg)
			b, err := e.msg.MarshalJSON()
			if err != nil {
				t.Fatalf("MarshalJSON(%+v): %v", e.msg, err)
			}
			var back Message
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("written message %s does not read back: %v", b, err)
			}
			if diff := cmp.Diff(e.msg, back, sameJSON); diff != "" {
				t.Fatalf("message round trip mismatch (-read +reread):\n%s", diff)
			}
			_ = e.msg.Key()
			_ = e.msg.IsProtocol()
		}
		if !valid {
			return
		}
		out := encodeEntries(entries)
		again, err := parseEntries(out, nil)
		if err != nil {
			t.Fatalf("re-encoded inbox does not parse: %v\n%s", err, out)
		}
		var msgs2 []Message
		for _, e := range again {
			if e.err == nil {
				msgs2 = append(msgs2, e.msg)
			}
		}
		if diff := cmp.Diff(msgs, msgs2, sameJSON); diff != "" {
			t.Fatalf("inbox round trip mismatch (-read +reread):\n%s", diff)
		}
		if !json.Valid(out) {
			t.Fatalf("re-encoded inbox is not valid JSON:\n%s", out)
		}
	})
}

// FuzzFrame: any text either is a protocol frame (Frame ok, IsProtocol)
// or not, never panics, and a frame's Raw is its trimmed text; the frames
// this package builds from any strings parse back to what went in.
func FuzzFrame(f *testing.F) {
	f.Add(`{"type":"shutdown_request","requestId":"shutdown-1@codex1","from":"team-lead","reason":"r","timestamp":"2026-11-25T10:51:59.694Z"}`, "x", "y")
	f.Add(`{"type":"idle_notification","from":"h","idleReason":"available","result":"done"}`, "", "<&>")
	f.Add("plain text", "id", "\u2028")
	f.Fuzz(func(t *testing.T, text, a, b string) {
		fr, ok := Message{Text: text}.Frame()
		if ok != (Message{Text: text}).IsProtocol() {
			t.Fatalf("Frame ok = %v but IsProtocol disagrees for %q", ok, text)
		}
		if ok && (fr.Type == "" || !json.Valid(fr.Raw)) {
			t.Fatalf("frame of %q = %+v", text, fr)
		}
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // JSON strings carry valid UTF-8 only
		}
		sr, ok := Message{Text: ShutdownResponseText(a, true, b)}.Frame()
		if !ok || sr.RequestID != a || sr.Reason != b || sr.Approve == nil || !*sr.Approve {
			t.Fatalf("ShutdownResponseText(%q, true, %q) parses to %+v, %v", a, b, sr, ok)
		}
		in, ok := Message{Text: IdleNotification{From: a, Summary: b, Result: b}.Text()}.Frame()
		if !ok || in.From != a || in.Summary != b || in.Result != clipUTF16(b, MaxIdleResult) {
			t.Fatalf("IdleNotification{%q, %q}.Text() parses to %+v, %v", a, b, in, ok)
		}
	})
}
