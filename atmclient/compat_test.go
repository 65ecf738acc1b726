package atmclient

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// installFixture copies testdata/name to team dev's inbox of agent.
func installFixture(t *testing.T, c *Client, agent, name string) (path string, fixture []byte) {
	t.Helper()
	fixture = mustRead(t, filepath.Join("testdata", name))
	path = inboxPath(t, c, "dev", agent)
	if err := os.WriteFile(path, fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, fixture
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

var fixtureMessages = map[string][]Message{
	"claude_code_inbox.json": {
		{From: "team-lead", Text: "Please start on task #1 <now> & report", Summary: "Start task 1", Timestamp: "2026-02-11T14:30:00.000Z",
			Extra: map[string]json.RawMessage{"color": raw(`"blue"`)}},
		{From: "researcher", Text: `{"type":"idle_notification","from":"researcher","timestamp":"2026-02-11T14:31:02.512Z","idleReason":"available"}`,
			Timestamp: "2026-02-11T14:31:02.512Z", Extra: map[string]json.RawMessage{"color": raw(`"green"`)}},
		{From: "researcher", Text: "Done: 3 files changed — see notes\nline two", Timestamp: "2026-02-11T14:32:10.007Z", Read: true,
			Extra: map[string]json.RawMessage{"color": raw(`"green"`)}},
	},
	"atm_cli_inbox.json": {
		{From: "arch-ctm", SourceTeam: "atm-dev", Text: "Build is green <ok> & done — ünïcode", Timestamp: "2026-03-18T20:21:33.123456789+00:00",
			Summary: "Build is green <ok> & done — ünïcode", MessageID: "5b0c2f0e-6a53-4d0c-9a55-0d6c7c1e2f3a", Extra: map[string]json.RawMessage{}},
		{From: "team-lead", Text: "ack", Timestamp: "2026-03-18T20:22:00.000000001+00:00", Read: true,
			Extra: map[string]json.RawMessage{"pendingAckAt": raw(`"2026-03-18T20:22:05.000000000+00:00"`)}},
		{From: "qa@other-team", Text: "legacy content key", Timestamp: "2026-03-18T20:23:00Z",
			Extra: map[string]json.RawMessage{
				"acknowledgesMessageId": raw(`"5b0c2f0e-6a53-4d0c-9a55-0d6c7c1e2f3a"`),
				"futureFeature":         raw("{\n      \"nested\": [\n        1,\n        2.5,\n        \"x\"\n      ],\n      \"empty\": {},\n      \"list\": []\n    }"),
			}},
	},
}

func TestFixturesRead(t *testing.T) {
	for name, want := range fixtureMessages {
		t.Run(name, func(t *testing.T) {
			c, _ := newTestHome(t, "arch-ctm", "team-lead")
			installFixture(t, c, "arch-ctm", name)
			got, err := c.Read(bg, "dev", "arch-ctm", ReadOptions{All: true, IncludeProtocol: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got.Messages); diff != "" {
				t.Errorf("Read mismatch (-want +got):\n%s", diff)
			}
			if len(got.Problems) != 0 {
				t.Errorf("Read problems = %v, want none", got.Problems)
			}
		})
	}
}

// TestFixturesAppend: appending to an inbox in either writer's exact shape
// keeps every existing byte and adds one element in the documented layout.
func TestFixturesAppend(t *testing.T) {
	for _, name := range []string{"claude_code_inbox.json", "atm_cli_inbox.json"} {
		t.Run(name, func(t *testing.T) {
			c, _ := newTestHome(t, "arch-ctm", "team-lead")
			c.now = func() time.Time { return time.Date(2026, 3, 19, 1, 2, 3, 40, time.FixedZone("x", 3600)) }
			path, fixture := installFixture(t, c, "arch-ctm", name)
			m, err := c.Send(bg, SendRequest{From: "team-lead", Team: "dev", To: "arch-ctm", Text: "a <b> & \"c\"\n\ttab \u2028 é"})
			if err != nil {
				t.Fatal(err)
			}
			elem := "{\n" +
				"    \"from\": \"team-lead\",\n" +
				"    \"source_team\": \"dev\",\n" +
				"    \"text\": \"a <b> & \\\"c\\\"\\n\\ttab \u2028 é\",\n" +
				"    \"timestamp\": \"2026-03-19T00:02:03.000000040Z\",\n" +
				"    \"read\": false,\n" +
				"    \"summary\": \"a <b> & \\\"c\\\"\\n\\ttab \u2028 é\",\n" +
				"    \"message_id\": \"" + m.MessageID + "\"\n" +
				"  }"
			want := string(fixture[:len(fixture)-2]) + ",\n  " + elem + "\n]"
			if diff := cmp.Diff(want, string(mustRead(t, path))); diff != "" {
				t.Errorf("inbox after Send mismatch (-want +got):\n%s", diff)
			}
			// A second client, reading cold, sees the old messages unchanged.
			c2, _ := New(Config{})
			got, err := c2.Read(bg, "dev", "arch-ctm", ReadOptions{All: true, IncludeProtocol: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(append(fixtureMessages[name], m), got.Messages); diff != "" {
				t.Errorf("Read after Send mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFixturesMarkRead: marking a message read changes only its read value,
// for an id-less Claude Code message as for an atm one, and a missing read
// key is appended.
func TestFixturesMarkRead(t *testing.T) {
	tests := []struct {
		fixture string
		index   int
		replace [2]string // old, new: the only change expected in the file
	}{
		{"claude_code_inbox.json", 0, [2]string{"\"color\": \"blue\",\n    \"read\": false", "\"color\": \"blue\",\n    \"read\": true"}},
		{"atm_cli_inbox.json", 0, [2]string{"+00:00\",\n    \"read\": false", "+00:00\",\n    \"read\": true"}},
		{"atm_cli_inbox.json", 2, [2]string{"      \"list\": []\n    }\n  }", "      \"list\": []\n    },\n    \"read\": true\n  }"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			c, _ := newTestHome(t, "arch-ctm")
			path, fixture := installFixture(t, c, "arch-ctm", tt.fixture)
			key := fixtureMessages[tt.fixture][tt.index].Key()
			n, err := c.MarkRead(bg, "dev", "arch-ctm", key, "id:no-such-message")
			if err != nil || n != 1 {
				t.Fatalf("MarkRead = %d, %v; want 1, nil", n, err)
			}
			if strings.Count(string(fixture), tt.replace[0]) != 1 {
				t.Fatalf("test bug: %q not unique in fixture", tt.replace[0])
			}
			want := strings.Replace(string(fixture), tt.replace[0], tt.replace[1], 1)
			if diff := cmp.Diff(want, string(mustRead(t, path))); diff != "" {
				t.Errorf("inbox after MarkRead mismatch (-want +got):\n%s", diff)
			}
			// Marking again is a no-op that does not rewrite the file.
			st, _ := os.Stat(path)
			if n, err := c.MarkRead(bg, "dev", "arch-ctm", key); err != nil || n != 0 {
				t.Fatalf("second MarkRead = %d, %v; want 0, nil", n, err)
			}
			if st2, _ := os.Stat(path); !os.SameFile(st, st2) {
				t.Error("a MarkRead that changed nothing replaced the file")
			}
		})
	}
}

// TestForeignLayout: an inbox written compactly, with CRLF or escaped HTML
// characters, is read, and rewritten in the pretty layout with values
// unchanged.
func TestForeignLayout(t *testing.T) {
	c, _ := newTestHome(t, "arch-ctm", "team-lead")
	path := inboxPath(t, c, "dev", "arch-ctm")
	in := "[{\"from\":\"x\",\"text\":\"\\u003cb\\u003e\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"read\":false,\"n\":[1,{\"a\":null}]},\r\n\t{\"from\":\"y\",\"text\":\"z\",\"timestamp\":\"2026-01-01T00:00:01Z\"}]\n"
	os.WriteFile(path, []byte(in), 0o644)
	if _, err := c.Send(bg, SendRequest{From: "team-lead", Team: "dev", To: "arch-ctm", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, path)
	wantPrefix := "[\n  {\n    \"from\": \"x\",\n    \"text\": \"\\u003cb\\u003e\",\n    \"timestamp\": \"2026-01-01T00:00:00Z\",\n    \"read\": false,\n    \"n\": [\n      1,\n      {\n        \"a\": null\n      }\n    ]\n  },\n  {\n    \"from\": \"y\",\n    \"text\": \"z\",\n    \"timestamp\": \"2026-01-01T00:00:01Z\"\n  },\n  {\n"
	if !bytes.HasPrefix(got, []byte(wantPrefix)) || !bytes.HasSuffix(got, []byte("\n  }\n]")) {
		t.Errorf("rewritten inbox:\n%s\nwant prefix:\n%s", got, wantPrefix)
	}
	res, err := c.Read(bg, "dev", "arch-ctm", ReadOptions{All: true})
	if err != nil || len(res.Messages) != 3 || res.Messages[0].Text != "<b>" {
		t.Errorf("Read = %+v, %v; want 3 messages, the first with text <b>", res, err)
	}
}

// TestTimestampsAsInstants: filters compare the three writers' formats as
// instants.
func TestTimestampsAsInstants(t *testing.T) {
	c, _ := newTestHome(t, "a")
	path := inboxPath(t, c, "dev", "a")
	os.WriteFile(path, []byte(`[
  {"from": "cc", "text": "1", "timestamp": "2026-03-18T20:21:33.000Z"},
  {"from": "atm", "text": "2", "timestamp": "2026-03-18T21:21:33.500000000+01:00"},
  {"from": "us", "text": "3", "timestamp": "2026-03-18T20:21:33.999999999Z"},
  {"from": "bad", "text": "4", "timestamp": "yesterday"}
]`), 0o644)
	tests := []struct {
		since string
		want  []string
	}{
		{"2026-03-18T20:21:33Z", []string{"1", "2", "3"}},
		{"2026-03-18T20:21:33.000000001Z", []string{"2", "3"}},
		{"2026-03-18T22:21:33.6+02:00", []string{"3"}},
		{"2026-03-18T20:21:34Z", nil},
	}
	for _, tt := range tests {
		since, _ := time.Parse(time.RFC3339Nano, tt.since)
		res, err := c.Read(bg, "dev", "a", ReadOptions{Since: since})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res.Messages {
			got = append(got, m.Text)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Read since %s mismatch (-want +got):\n%s", tt.since, diff)
		}
	}
}
