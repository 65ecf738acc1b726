package registry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// plantedSecrets are credentials that must never reach the audit file,
// each inside realistic surrounding text.
var plantedSecrets = []struct {
	name, text, secret string
}{
	{"openai project key", "use key sk-proj-AbCdEf0123456789_xyzXYZ-987 for the call", "sk-proj-AbCdEf0123456789_xyzXYZ-987"},
	{"openai key", "OPENAI key is sk-1234567890abcdefghij", "sk-1234567890abcdefghij"},
	{"anthropic key", "ant: sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4"},
	{"session key", "cookie sess-QwErTyUiOp1234567890 leaked", "sess-QwErTyUiOp1234567890"},
	{"authorization header", "curl -H 'Authorization: Bearer xyzTOKENxyz123' https://api", "xyzTOKENxyz123"},
	{"bearer in prose", "send bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig to it", "eyJhbGciOiJIUzI1NiJ9"},
	{"basic auth header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"},
	{"env api key", "run with OPENAI_API_KEY=abc123secretvalue ./x", "abc123secretvalue"},
	{"github token", "export GITHUB_TOKEN=ghp_notARealTokenButLongEnough12345", "ghp_notARealTokenButLongEnough12345"},
	{"bare github token", "token ghp_aaaaBBBBccccDDDDeeeeFFFF1234", "ghp_aaaaBBBBccccDDDDeeeeFFFF1234"},
	{"password", "db password=hunter2!x and more", "hunter2!x"},
	{"password colon", "PASSWORD: 'open sesame'", "open sesame"},
	{"json api key", `config {"api_key": "k-9f8e7d6c5b4a"}`, "k-9f8e7d6c5b4a"},
	{"json secret", `{"client_secret":"s3cr3t-v@lue"}`, "s3cr3t-v@lue"},
	{"aws key id", "AWS_ACCESS_KEY_ID AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"},
	{"aws secret", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"},
	{"slack", "xoxb-123456789012-abcdefghijkl posted", "xoxb-123456789012-abcdefghijkl"},
	{"private key", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7secretbody\nAAAB3Nza\n-----END RSA PRIVATE KEY-----\nthanks", "MIIEpAIBAAKCAQEA7secretbody"},
	{"openssh private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"},
	{"cut private key", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
}

func TestRedact(t *testing.T) {
	for _, tt := range plantedSecrets {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.text)
			if strings.Contains(got, tt.secret) {
				t.Errorf("Redact(%q) = %q, still contains the secret", tt.text, got)
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("Redact(%q) = %q, no %s marker", tt.text, got, Redacted)
			}
		})
	}
	// What stays readable.
	keep := []struct{ in, want string }{
		{"OPENAI_API_KEY=abc123secretvalue", "OPENAI_API_KEY=" + Redacted},
		{"Authorization: Bearer xyzTOKENxyz123", "Authorization: Bearer " + Redacted},
		{"please review the basic token handling in auth.go", "please review the basic token handling in auth.go"},
		{"refactor task-runner and use max_tokens=100", "refactor task-runner and use max_tokens=100"},
		{"ask-questions module, the bearer of news", "ask-questions module, the bearer of news"},
		{"PWD=/home/dev/src cwd=/tmp", "PWD=/home/dev/src cwd=/tmp"},
		{"", ""},
	}
	for _, tt := range keep {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTruncateRunes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo wörld", 4, "héll"},
		{"日本語テキスト", 3, "日本語"},
		{"🙂🙂🙂", 2, "🙂🙂"},
		{"a\xffb", 2, "a\xff"},
		{"abc", 0, ""},
	}
	for _, tt := range tests {
		if got := truncateRunes(tt.in, tt.n); got != tt.want {
			t.Errorf("truncateRunes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// readAudit parses every line of the team's audit log.
func readAudit(t *testing.T, d Dir) ([]Entry, []byte) {
	t.Helper()
	data, err := os.ReadFile(d.auditPath())
	if err != nil {
		t.Fatal(err)
	}
	var entries []Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q does not parse: %v", sc.Text(), err)
		}
		entries = append(entries, e)
	}
	return entries, data
}

func TestAuditRedactsPlantedSecrets(t *testing.T) {
	testHome(t)
	d, _ := TeamDir("", "team")
	clock := newFakeClock()
	a, err := d.OpenAudit(AuditConfig{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, s := range plantedSecrets {
		e := Entry{Event: EventATMSend, AgentID: "codex-1", Identity: "arch", Recipient: "team-lead", Summary: s.text, Outcome: "ok"}
		if err := a.Append(e); err != nil {
			t.Fatal(err)
		}
		// In other fields too, and past the 200-character cut.
		e = Entry{Event: EventCodex, Recipient: s.text, Outcome: "error: " + s.text, Summary: strings.Repeat("x", 190) + " " + s.text}
		if err := a.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	entries, data := readAudit(t, d)
	if len(entries) != 2*len(plantedSecrets) {
		t.Fatalf("%d audit entries, want %d", len(entries), 2*len(plantedSecrets))
	}
	for _, s := range plantedSecrets {
		// JSON escapes newlines and some characters; check both forms.
		quoted, _ := json.Marshal(s.secret)
		if bytes.Contains(data, []byte(s.secret)) || bytes.Contains(data, quoted[1:len(quoted)-1]) {
			t.Errorf("%s: secret %q reached the audit file", s.name, s.secret)
		}
	}
	want := Entry{Time: clock.Now(), Event: EventATMSend, AgentID: "codex-1", Identity: "arch", Recipient: "team-lead",
		Summary: "run with OPENAI_API_KEY=" + Redacted + " ./x", Outcome: "ok"}
	if diff := cmp.Diff(want, entries[14]); diff != "" {
		t.Errorf("entry (-want +got):\n%s", diff)
	}
}

func TestAuditSummaryLimit(t *testing.T) {
	testHome(t)
	d, _ := TeamDir("", "team")
	a, err := d.OpenAudit(AuditConfig{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 150) + strings.Repeat("日", 150)
	if err := a.Append(Entry{Event: EventCodexReply, AgentID: "codex-1", Summary: long}); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(Entry{Event: EventCodex, Summary: "short"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := a.Append(Entry{Event: EventCodex}); err == nil {
		t.Error("Append after Close succeeded")
	}
	entries, data := readAudit(t, d)
	if lines := strings.Split(string(data), "\n"); !strings.Contains(lines[1], `"agent_id":"","identity":""`) {
		t.Errorf("entry without agent_id and identity lacks the fields: %s", lines[1])
	}
	if got := entries[0].Summary; utf8.RuneCountInString(got) != SummaryLimit || !utf8.ValidString(got) || got != long[:150*2+50*3] {
		t.Errorf("summary has %d characters (valid UTF-8: %v), want the first %d", utf8.RuneCountInString(got), utf8.ValidString(got), SummaryLimit)
	}
	if entries[1].Summary != "short" || entries[1].Time.IsZero() {
		t.Errorf("second entry = %+v", entries[1])
	}
}

// TestAuditConcurrentAppends has two processes and several goroutines
// append to one log at once: every line must parse and none may be lost.
func TestAuditConcurrentAppends(t *testing.T) {
	home := testHome(t)
	const perWriter = 300
	kids := []*child{
		startChild(t, "audit", "ATM_HOME="+home, "CHILD_TEAM=team", "CHILD_TAG=proc-a", fmt.Sprintf("CHILD_N=%d", perWriter)),
		startChild(t, "audit", "ATM_HOME="+home, "CHILD_TEAM=team", "CHILD_TAG=proc-b", fmt.Sprintf("CHILD_N=%d", perWriter)),
	}
	d, _ := TeamDir("", "team")
	a, err := d.OpenAudit(AuditConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			tag := fmt.Sprintf("goroutine-%d", g)
			for i := range perWriter {
				if err := a.Append(Entry{Event: EventATMRead, AgentID: tag, Summary: fmt.Sprintf("%s %d %s", tag, i, strings.Repeat("y", 180))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	a.Close()
	for _, k := range kids {
		k.expectPrefix("done")
	}
	entries, _ := readAudit(t, d)
	counts := make(map[string]int)
	for _, e := range entries {
		counts[e.AgentID]++
	}
	want := map[string]int{"proc-a": perWriter, "proc-b": perWriter, "goroutine-0": perWriter, "goroutine-1": perWriter, "goroutine-2": perWriter}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("entries per writer (-want +got):\n%s", diff)
	}
}
