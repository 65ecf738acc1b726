package mockcodex

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRetryNotices: RETRY=<n> sends n retry notices before the model
// answers as usual: mcp-server stream_error events, app-server error
// notifications with willRetry true.
func TestRetryNotices(t *testing.T) {
	notice := func(i int) string {
		return fmt.Sprintf("Reconnecting... %d/2 (stream disconnected before completion: error sending request for url (http://127.0.0.1:9/v1/responses))", i)
	}
	t.Run("mcp-server", func(t *testing.T) {
		c := start(t, testEnv(t), "mcp-server")
		c.initialize()
		c.call(2, "codex", msg{"prompt": "RETRY=2 hello", "cwd": t.TempDir()})
		evs, res := c.response(2)
		var got []msg
		for _, e := range evs {
			if evType(e) == "stream_error" {
				got = append(got, evMsg(e))
			}
		}
		want := []msg{
			{"type": "stream_error", "message": notice(1), "codex_error_info": "other", "additional_details": nil},
			{"type": "stream_error", "message": notice(2), "codex_error_info": "other", "additional_details": nil},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("retry notices (-want +got):\n%s", diff)
		}
		if got := resultText(res); got != "MOCK_REPLY: RETRY=2 hello" {
			t.Errorf("result after the retries = %q", got)
		}
	})
	t.Run("app-server", func(t *testing.T) {
		c := start(t, testEnv(t), "app-server")
		c.appInit()
		thread := c.threadStart(2, msg{"cwd": t.TempDir()})
		c.turn(3, thread, "RETRY=2 hello")
		evs, turn := c.turnCompleted()
		var got []msg
		for _, e := range evs {
			if e["method"] == "error" {
				p := e["params"].(msg)
				got = append(got, msg{"message": p["error"].(msg)["message"], "willRetry": p["willRetry"]})
			}
		}
		want := []msg{{"message": notice(1), "willRetry": true}, {"message": notice(2), "willRetry": true}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("retry notices (-want +got):\n%s", diff)
		}
		if turn["status"] != "completed" {
			t.Errorf("turn after the retries = %v", turn)
		}
	})
}
