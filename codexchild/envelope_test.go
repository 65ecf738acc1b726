package codexchild

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInterner: the strings are those of the tokens (escapes and invalid
// UTF-8 decoded as encoding/json does), and a repeated one costs nothing.
func TestInterner(t *testing.T) {
	var in interner
	for _, tok := range []string{`"019a-thread"`, `"agent_message"`, `"a\"b\u00e9"`, "\"bad\xff\"", `""`, `7`, ``} {
		var want string
		_ = json.Unmarshal([]byte(tok), &want)
		for range 2 {
			if got := in.str(json.RawMessage(tok)); got != want {
				t.Errorf("str(%s) = %q, want %q", tok, got, want)
			}
		}
	}
	thread := json.RawMessage(`"01a20035-0a7e-755f-a01f-e0f48db6f60f"`)
	in.str(thread)
	if n := testing.AllocsPerRun(100, func() { in.str(thread) }); n != 0 {
		t.Errorf("a repeated string allocated %v times", n)
	}
}

// TestEventEnvelopeScan reads the routing fields of a recorded event.
func TestEventEnvelopeScan(t *testing.T) {
	params := json.RawMessage(`{"_meta": {"requestId": 2, "threadId": "T1"}, "id": "U1", "msg": {"type": "agent_message_content_delta", "turn_id": "U1", "delta": "MOCK"}}`)
	var in interner
	var env eventEnvelope
	if !env.scan(params, &in) {
		t.Fatal("scan failed")
	}
	got := []string{string(env.Meta.RequestID), env.Meta.ThreadID, env.ID, env.Msg.Type, env.Msg.TurnID, env.Msg.Delta}
	if diff := cmp.Diff([]string{"2", "T1", "U1", "agent_message_content_delta", "U1", "MOCK"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if env.scan(json.RawMessage(`[1]`), &in) {
		t.Error("scan of an array succeeded")
	}
}
