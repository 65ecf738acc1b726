package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// TestClose: closing fails the queued turns, frees the identity, and
// writes the record at once (closed, or interrupted when a turn ran); a
// summary turn runs only when asked for, on the session's own thread.
func TestClose(t *testing.T) {
	tests := []struct {
		name       string
		busy       bool
		summarize  bool
		wantStatus registry.Status
	}{
		{"idle", false, false, registry.StatusClosed},
		{"idle with a summary", false, true, registry.StatusClosed},
		{"busy", true, false, registry.StatusInterrupted},
		{"busy with a summary", true, true, registry.StatusInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			s := h.create("arch")
			if _, err := s.Run(context.Background(), Turn{Prompt: "hello", Source: SourceClaude}); err != nil {
				t.Fatal(err)
			}
			var first, queued chan string
			if tt.busy {
				first = runAsync(s, Turn{Prompt: "BLOCK", Source: SourceClaude})
				poll.Until(t, "the turn to run", func() bool { return s.Detail(0).Busy })
				queued = runAsync(s, Turn{Prompt: "later", Source: SourceClaude})
				poll.Until(t, "a turn to be queued", func() bool { return s.Detail(0).Queued == 1 })
			}
			before := len(h.fb.Requests())
			out := h.m.Close(context.Background(), s, tt.summarize)
			if tt.busy {
				if got := <-queued; !strings.Contains(got, "was closed") {
					t.Errorf("queued turn = %q, want SESSION_CLOSED", got)
				}
				<-first
			}
			if out.Already || out.SummarySaved != tt.summarize || out.Record.Status != tt.wantStatus {
				t.Errorf("Close = %+v, want status %s, summary saved %v", out, tt.wantStatus, tt.summarize)
			}
			var summaries int
			for _, r := range h.fb.Requests()[before:] {
				if r.Prompt == summaryPrompt {
					summaries++
					if !r.SameThread || r.ThreadID != "thread-1" {
						t.Errorf("summary turn on thread %q (same thread %v), want thread-1 as it is", r.ThreadID, r.SameThread)
					}
				}
			}
			if want := map[bool]int{true: 1}[tt.summarize]; summaries != want {
				t.Errorf("%d summary turns, want %d", summaries, want)
			}
			recs := h.reg.List(registry.Filter{})
			if len(recs) != 1 || recs[0].Status != tt.wantStatus || recs[0].BackendID != "thread-1" || recs[0].Turns < 1 || recs[0].LastResult != "echo: hello" {
				t.Errorf("registry = %+v, want %s with thread-1, its turns and last result", recs, tt.wantStatus)
			}
			if got := h.reg.HasSummary("arch", "thread-1"); got != tt.summarize {
				t.Errorf("summary saved = %v, want %v", got, tt.summarize)
			}
			if again := h.m.Close(context.Background(), s, tt.summarize); !again.Already {
				t.Errorf("second Close = %+v, want Already", again)
			}
			if h.m.ByIdentity("arch") != nil {
				t.Error("the identity is still held after Close")
			}
			if _, err := s.Run(context.Background(), Turn{Prompt: "x"}); !errors.Is(err, proxyerr.ErrSessionClosed) {
				t.Errorf("Run on a closed session: %v, want SESSION_CLOSED", err)
			}
		})
	}
}

// TestShutdownRecordsFirst: at shutdown every session's record is closed
// with its facts before any summary comes (a summary can take seconds; a
// client's SIGKILL comes after 500 ms), and a summary that comes later is
// still saved.
func TestShutdownRecordsFirst(t *testing.T) {
	h := newHarness(t, nil)
	gate := make(chan struct{})
	h.fb.Gate(summaryPrompt, gate)
	idle, busy := h.create("arch"), h.create("dev-1")
	for _, s := range []*Session{idle, busy} {
		if _, err := s.Run(context.Background(), Turn{Prompt: "work " + s.Record().Identity, Source: SourceClaude}); err != nil {
			t.Fatal(err)
		}
	}
	running := runAsync(busy, Turn{Prompt: "BLOCK", Source: SourceClaude})
	poll.Until(t, "the turn to run", func() bool { return busy.Detail(0).Busy })
	done := make(chan struct{})
	go func() { h.m.Shutdown(); close(done) }()
	type fact struct {
		Identity   string
		Status     registry.Status
		Thread     string
		Turns      int
		LastResult string
	}
	facts := func() []fact {
		var out []fact
		for _, r := range h.reg.List(registry.Filter{}) {
			out = append(out, fact{r.Identity, r.Status, r.BackendID, r.Turns, r.LastResult})
		}
		return out
	}
	want := []fact{{"arch", registry.StatusClosed, "thread-1", 1, "echo: work arch"},
		{"dev-1", registry.StatusInterrupted, "thread-2", 1, "echo: work dev-1"}}
	sortFacts := cmp.Transformer("sort", func(in []fact) []fact {
		out := append([]fact(nil), in...)
		if len(out) == 2 && out[0].Identity > out[1].Identity {
			out[0], out[1] = out[1], out[0]
		}
		return out
	})
	poll.Until(t, "both records closed while the summaries wait", func() bool { return cmp.Diff(want, facts(), sortFacts) == "" })
	if h.reg.HasSummary("arch", "thread-1") {
		t.Error("a summary was saved before the model gave it")
	}
	close(gate)
	<-done
	<-running
	for _, s := range []struct{ identity, thread string }{{"arch", "thread-1"}, {"dev-1", "thread-2"}} {
		if !h.reg.HasSummary(s.identity, s.thread) {
			t.Errorf("no summary saved for %s after it came", s.identity)
		}
	}
	if diff := cmp.Diff(want, facts(), sortFacts); diff != "" {
		t.Errorf("records after the summaries (-want +got):\n%s", diff)
	}
}
