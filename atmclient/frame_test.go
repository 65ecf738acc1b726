package atmclient

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

func TestFrame(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Frame
		ok   bool
	}{
		{"shutdown request (Claude Code)",
			`{"type":"shutdown_request","requestId":"shutdown-1@codex1","from":"team-lead","reason":"done for today","timestamp":"2026-11-25T10:51:59.694Z"}`,
			Frame{Type: FrameShutdownRequest, RequestID: "shutdown-1@codex1", From: "team-lead", Reason: "done for today"}, true},
		{"shutdown response",
			`{"type":"shutdown_response","request_id":"shutdown-1@codex1","approve":true}`,
			Frame{Type: FrameShutdownResponse, RequestID: "shutdown-1@codex1", Approve: ptr(true)}, true},
		{"idle notification",
			` {"type":"idle_notification","from":"helper","timestamp":"2026-11-25T10:52:00.000Z","idleReason":"available","summary":"s","result":"helper done"} `,
			Frame{Type: FrameIdleNotification, From: "helper", IdleReason: IdleAvailable, Summary: "s", Result: "helper done"}, true},
		{"plan approval request, odd field types",
			`{"type":"plan_approval_request","request_id":7,"approve":"yes","from":"x"}`,
			Frame{Type: "plan_approval_request", From: "x"}, true},
		{"prose", "please review", Frame{}, false},
		{"JSON without type", `{"from":"x"}`, Frame{}, false},
		{"empty type", `{"type":""}`, Frame{}, false},
		{"not JSON", `{"type":"x"`, Frame{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Message{Text: tt.text}
			got, ok := m.Frame()
			if ok != tt.ok || ok != m.IsProtocol() {
				t.Fatalf("Frame ok = %v, IsProtocol = %v; want %v", ok, m.IsProtocol(), tt.ok)
			}
			if ok {
				if string(got.Raw) != strings.TrimSpace(tt.text) {
					t.Errorf("Raw = %s, want the text", got.Raw)
				}
				got.Raw = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Frame (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShutdownResponseText(t *testing.T) {
	tests := []struct {
		id      string
		approve bool
		reason  string
		want    string
	}{
		{"shutdown-1@codex1", true, "", `{"type":"shutdown_response","request_id":"shutdown-1@codex1","approve":true}`},
		{"shutdown-2@codex1", false, `busy <"x">`, `{"type":"shutdown_response","request_id":"shutdown-2@codex1","approve":false,"reason":"busy <\"x\">"}`},
	}
	for _, tt := range tests {
		got := ShutdownResponseText(tt.id, tt.approve, tt.reason)
		if got != tt.want {
			t.Errorf("ShutdownResponseText(%q, %v, %q) = %s, want %s", tt.id, tt.approve, tt.reason, got, tt.want)
		}
		f, ok := Message{Text: got}.Frame()
		if !ok || f.Type != FrameShutdownResponse || f.RequestID != tt.id || f.Approve == nil || *f.Approve != tt.approve || f.Reason != tt.reason {
			t.Errorf("Frame of %s = %+v, %v", got, f, ok)
		}
	}
}

func TestIdleNotificationText(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 52, 0, 123456789, time.FixedZone("x", 3600))
	long := strings.Repeat("a", MaxIdleResult-1) + "😀" + "tail" // the emoji is 2 UTF-16 units
	tests := []struct {
		name string
		n    IdleNotification
		want string
	}{
		{"minimal", IdleNotification{From: "codex1", Timestamp: at},
			`{"type":"idle_notification","from":"codex1","timestamp":"2026-11-25T09:52:00.123Z","idleReason":"available"}`},
		{"failed with summary and result", IdleNotification{From: "codex1", IdleReason: IdleFailed, Summary: "s", Result: "line\nerr", Timestamp: at},
			`{"type":"idle_notification","from":"codex1","timestamp":"2026-11-25T09:52:00.123Z","idleReason":"failed","summary":"s","result":"line\nerr"}`},
		{"result clipped on a character boundary", IdleNotification{From: "codex1", Result: long, Timestamp: at},
			`{"type":"idle_notification","from":"codex1","timestamp":"2026-11-25T09:52:00.123Z","idleReason":"available","result":"` + strings.Repeat("a", MaxIdleResult-1) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.n.Text()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Text (-want +got):\n%s", diff)
			}
			f, ok := Message{Text: got}.Frame()
			if !ok || f.Type != FrameIdleNotification || f.From != tt.n.From {
				t.Errorf("Frame of the text = %+v, %v", f, ok)
			}
		})
	}
	if got := clipUTF16("ab😀c", 3); got != "ab" {
		t.Errorf("clipUTF16 = %q, want %q", got, "ab")
	}
	if got := clipUTF16("ab😀c", 4); got != "ab😀" {
		t.Errorf("clipUTF16 = %q, want %q", got, "ab😀")
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(IdleNotification{From: "x"}.Text()), &v); err != nil || v["timestamp"] == "" {
		t.Errorf("zero timestamp: %v %v", v, err)
	}
}

// Claude Code's msg_id is a message id: Key uses it, an append with the
// same id is dropped, and a rewrite keeps the key as msg_id.
func TestMsgID(t *testing.T) {
	cc := `{"from":"team-lead","text":"hello codex1","summary":"lead reply","timestamp":"2026-11-25T10:51:59.694Z","msgV":1,"msg_id":"1597dab6-0000-4000-8000-000000000001","type":"message","read":false}`
	var m Message
	jsonUnmarshal(t, []byte(cc), &m)
	if got, want := m.ID(), "1597dab6-0000-4000-8000-000000000001"; got != want {
		t.Errorf("ID() = %q, want %q", got, want)
	}
	if got, want := m.Key(), "id:1597dab6-0000-4000-8000-000000000001"; got != want {
		t.Errorf("Key() = %q, want %q", got, want)
	}
	both := Message{MessageID: "a", Extra: map[string]json.RawMessage{"msg_id": raw(`"b"`)}}
	if both.ID() != "a" {
		t.Errorf("ID() with both keys = %q, want message_id", both.ID())
	}
	if id := (Message{Extra: map[string]json.RawMessage{"msg_id": raw(`7`)}}).ID(); id != "" {
		t.Errorf("ID() of a numeric msg_id = %q, want none", id)
	}

	c, _ := newTestHome(t, "codex1")
	path := inboxPath(t, c, "dev", "codex1")
	if err := os.WriteFile(path, []byte("[\n  "+cc+"\n]"), 0o600); err != nil {
		t.Fatal(err)
	}
	dup := Message{From: "team-lead", Text: "other text", Timestamp: "2026-11-25T10:52:00.000Z", MessageID: m.ID()}
	if err := c.appendMessage(bg, "dev", "codex1", dup); err != nil {
		t.Fatal(err)
	}
	if n, err := c.MarkRead(bg, "dev", "codex1", m.Key()); err != nil || n != 1 {
		t.Fatalf("MarkRead = %d, %v; want 1", n, err)
	}
	res, err := c.Read(bg, "dev", "codex1", ReadOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || !res.Messages[0].Read || res.Messages[0].MessageID != "" || string(res.Messages[0].Extra["msg_id"]) != `"1597dab6-0000-4000-8000-000000000001"` {
		t.Errorf("inbox after a duplicate append and MarkRead = %+v; want the one message, read, still with msg_id", res.Messages)
	}
}
