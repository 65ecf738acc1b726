package ccsession

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeRecords writes records as Claude Code 2.1.332 wrote them (trimmed
// of fields this package does not read; the interactive one after ←).
func writeRecords(t *testing.T, home string, files map[string]string) {
	t.Helper()
	dir := Dir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecords(t *testing.T) {
	home := t.TempDir()
	writeRecords(t, home, map[string]string{
		"30999.json":             `{"pid":30999,"sessionId":"989d660a-73ca-4abe-b863-e84f1c7109f3","cwd":"/w","kind":"interactive","entrypoint":"cli","messagingSocketPath":"/tmp/cc-socks/30999.sock","status":"idle","parkedJobId":"141a23ea"}`,
		"502.json":               `{"pid":502,"sessionId":"141a23ea-68d2-4e09-aa7b-a85d75a652b7","kind":"bg","messagingSocketPath":"/tmp/cc-socks/502.sock","jobId":"141a23ea","status":"idle"}`,
		"505.json":               `{"pid":505,"sessionId":"6e7a691a-d187-4ecb-84c4-c47a52e2cb1b","kind":"bg","messagingSocketPath":"/tmp/cc-socks/505.sock","agent":"claude","jobId":"6e7a691a","spare":true}`,
		"777.json":               `{"pid":777,"sessionId":"half-writ`,
		"30999.6dd5b3388ed5.key": `secret`,
	})
	lead := Record{PID: 30999, SessionID: "989d660a-73ca-4abe-b863-e84f1c7109f3", Kind: "interactive", ParkedJobID: "141a23ea", MessagingSocketPath: "/tmp/cc-socks/30999.sock"}
	bg := Record{PID: 502, SessionID: "141a23ea-68d2-4e09-aa7b-a85d75a652b7", Kind: "bg", JobID: "141a23ea", MessagingSocketPath: "/tmp/cc-socks/502.sock"}

	tests := []struct {
		name   string
		socket string
		ppid   int
		want   Record
		ok     bool
	}{
		{"by its messaging socket", "/tmp/cc-socks/30999.sock", 1, lead, true},
		{"the socket wins over the parent", "/tmp/cc-socks/502.sock", 30999, bg, true},
		{"by the parent pid", "", 502, bg, true},
		{"an unknown socket, then the parent", "/tmp/cc-socks/9.sock", 30999, lead, true},
		{"a record being written", "", 777, Record{}, false},
		{"no record", "/tmp/cc-socks/9.sock", 4242, Record{}, false},
		{"init is no client", "", 1, Record{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Client(home, tc.socket, tc.ppid)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Client (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff([]Record{lead}, ParkedTo(home, "141a23ea")); diff != "" {
		t.Errorf("ParkedTo(141a23ea) (-want +got):\n%s", diff)
	}
	if got := ParkedTo(home, "6e7a691a"); got != nil {
		t.Errorf("ParkedTo(6e7a691a) = %v, want none", got)
	}
	if got := ParkedTo(home, ""); got != nil {
		t.Errorf("ParkedTo(\"\") = %v, want none", got)
	}
	if got := len(List(home)); got != 3 {
		t.Errorf("List: %d records, want 3", got)
	}
	if got := List(t.TempDir()); got != nil {
		t.Errorf("List without a sessions directory = %v", got)
	}
}

func TestShort(t *testing.T) {
	for in, want := range map[string]string{
		"141a23ea-68d2-4e09-aa7b-a85d75a652b7": "141a23ea",
		" 141a23ea-68d2 ":                      "141a23ea",
		"abc":                                  "abc",
		"":                                     "",
	} {
		if got := Short(in); got != want {
			t.Errorf("Short(%q) = %q, want %q", in, got, want)
		}
	}
}
