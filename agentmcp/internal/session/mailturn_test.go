package session

import (
	"context"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/google/go-cmp/cmp"
)

// TestTryMailThenReportsTheEnd: a mail turn's end is reported once, after
// the session moved on, with how the turn ended (what the proxy's
// idle_notification says).
func TestTryMailThenReportsTheEnd(t *testing.T) {
	type end struct {
		Status, Text string
		IsError, Err bool
		Idle         bool // the session had moved on when ended ran
	}
	tests := []struct {
		name   string
		prompt string
		finish func(h *harness, s *Session)
		want   end
	}{
		{"completed", "<team-mail>hi</team-mail>\nhello", func(*harness, *Session) {},
			end{Status: "completed", Text: "echo: hello", Idle: true}},
		{"released", "BLOCK", func(h *harness, _ *Session) { h.fb.Answer("done it") },
			end{Status: "completed", Text: "done it", Idle: true}},
		{"interrupted", "BLOCK", func(_ *harness, s *Session) {
			if ok, err := s.Interrupt(context.Background()); !ok || err != nil {
				t.Errorf("Interrupt = %v, %v", ok, err)
			}
		}, end{Status: "interrupted", Text: "interrupted", IsError: true, Idle: true}},
		{"failed", "UNREACHABLE", func(*harness, *Session) {}, end{Err: true, Idle: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			s := h.create("arch")
			if _, err := s.Run(context.Background(), Turn{Prompt: "first", Source: SourceClaude}); err != nil {
				t.Fatal(err) // a thread, and the session idle: what auto-mail needs
			}
			ended := make(chan end, 2)
			ok := s.TryMailThen(tt.prompt, func(bool) {}, func(r *TurnResult, err error) {
				e := end{Err: err != nil, Idle: !s.Detail(0).Busy}
				if r != nil {
					e.Status, e.Text, e.IsError = r.Status, r.Text, r.IsError
				}
				ended <- e
			})
			if !ok {
				t.Fatal("TryMailThen on an idle session = false")
			}
			poll.Until(t, "the mail turn to run", func() bool { return len(h.fb.Requests()) == 2 })
			tt.finish(h, s)
			if diff := cmp.Diff(tt.want, <-ended); diff != "" {
				t.Errorf("ended (-want +got):\n%s", diff)
			}
			select {
			case e := <-ended:
				t.Errorf("ended twice: %+v", e)
			default:
			}
		})
	}
}
