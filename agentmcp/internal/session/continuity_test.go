package session

import (
	"context"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/poll"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
	"github.com/google/go-cmp/cmp"
)

// TestResumeContinuity: a resumed session's first turn asks for its own
// thread and says whether it got it; where the backend could not continue
// it, the new thread was given the saved summary, else the last result,
// and the result says so. Later turns say nothing unless their thread is
// replaced too.
func TestResumeContinuity(t *testing.T) {
	tests := []struct {
		name     string
		lost     bool   // the backend cannot continue thread-1
		summary  string // saved before the resume
		want     *ThreadNote
		wantSeed string // offered to the backend, used only for a new thread
	}{
		{name: "the thread continues", want: &ThreadNote{Continued: true, Resumed: true},
			wantSeed: "[Previous session — arch on no-repo/no-branch: no summary was saved. Your last answer in it (turn 1) was:]\necho: hello\n[End of previous session]"},
		{name: "the thread continues; the summary is only the seed", summary: "did X", want: &ThreadNote{Continued: true, Resumed: true},
			wantSeed: "[Previous session — arch on no-repo/no-branch]\ndid X\n[End of previous session]"},
		{name: "lost, with a summary", lost: true, summary: "did X",
			want:     &ThreadNote{Resumed: true, PreviousThreadID: "thread-1", Reason: "lost by the fake", Given: "its saved summary"},
			wantSeed: "[Previous session — arch on no-repo/no-branch]\ndid X\n[End of previous session]"},
		{name: "lost, no summary: the last result", lost: true,
			want:     &ThreadNote{Resumed: true, PreviousThreadID: "thread-1", Reason: "lost by the fake", Given: "its last result"},
			wantSeed: "[Previous session — arch on no-repo/no-branch: no summary was saved. Your last answer in it (turn 1) was:]\necho: hello\n[End of previous session]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			s := h.create("arch")
			if _, err := s.Run(context.Background(), Turn{Prompt: "hello", Source: SourceClaude}); err != nil {
				t.Fatal(err)
			}
			h.m.Close(context.Background(), s, false)
			if tt.summary != "" {
				if err := h.reg.WriteSummary("arch", "thread-1", tt.summary); err != nil {
					t.Fatal(err)
				}
			}
			if tt.lost {
				h.fb.Lose("thread-1")
			}
			if err := h.m.Rebind(s, SourceClaude); err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(context.Background(), Turn{Prompt: "go on", Source: SourceResume})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.Thread); diff != "" {
				t.Errorf("Thread (-want +got):\n%s", diff)
			}
			reqs := h.fb.Requests()
			if got := reqs[len(reqs)-1]; got.ThreadID != "thread-1" || got.Seed != tt.wantSeed {
				t.Errorf("turn asked for thread %q with seed %q, want thread-1 with %q", got.ThreadID, got.Seed, tt.wantSeed)
			}
			if d := s.Detail(0); d.LastResult == nil || cmp.Diff(tt.want, d.LastResult.Thread) != "" {
				t.Errorf("agent_status last_result = %+v, want its thread note", d.LastResult)
			}
			if rec := s.Record(); rec.BackendID != res.ThreadID {
				t.Errorf("session thread = %q, want the turn's %q", rec.BackendID, res.ThreadID)
			}
			next, err := s.Run(context.Background(), Turn{Prompt: "and then", Source: SourceClaude})
			if err != nil || next.Thread != nil {
				t.Errorf("the next turn = %+v, %v; want no thread note", next, err)
			}
			if reqs := h.fb.Requests(); reqs[len(reqs)-1].Seed != "" {
				t.Errorf("the next turn carried a seed %q", reqs[len(reqs)-1].Seed)
			}
		})
	}
}

// TestReplacedThreadSaysSo: a turn that is no resume but ran on a new
// thread in place of the session's (the backend lost it) says so too, and
// the session's thread becomes the new one.
func TestReplacedThreadSaysSo(t *testing.T) {
	h := newHarness(t, nil)
	s := h.create("arch")
	if _, err := s.Run(context.Background(), Turn{Prompt: "hello", Source: SourceClaude}); err != nil {
		t.Fatal(err)
	}
	h.fb.Lose("thread-1")
	res, err := s.Run(context.Background(), Turn{Prompt: "again", Source: SourceClaude})
	if err != nil {
		t.Fatal(err)
	}
	want := &ThreadNote{PreviousThreadID: "thread-1", Reason: "lost by the fake"}
	if diff := cmp.Diff(want, res.Thread); diff != "" || res.ThreadID != "thread-2" {
		t.Errorf("Thread (-want +got):\n%s; thread %q, want thread-2", diff, res.ThreadID)
	}
	if got, want := res.Thread.Text(), "[Not the same thread: the agent's thread thread-1 could not be continued (lost by the fake). "+
		"This turn ran on a new thread, given nothing of it; the agent does not remember the rest.]"; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
}

// TestThreadIDRecordedAtOnce: the registry has a new session's thread as
// soon as the backend names it, while its first turn still runs.
func TestThreadIDRecordedAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	s := h.create("arch")
	first := runAsync(s, Turn{Prompt: "BLOCK", Source: SourceClaude})
	poll.Until(t, "the thread in the registry while the turn runs", func() bool {
		recs := h.reg.List(registry.Filter{})
		return len(recs) == 1 && recs[0].BackendID == "thread-1"
	})
	if !s.Detail(0).Busy {
		t.Error("the turn ended before the check")
	}
	h.fb.Answer("ok")
	<-first
}
