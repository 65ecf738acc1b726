package registry

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFinish: several live sessions end with one write, their facts kept
// and their identities released; a session already finished is left as
// it is; a bad request changes nothing.
func TestFinish(t *testing.T) {
	tests := []struct {
		name    string
		fns     func() map[string]func(*Session)
		wantErr bool
		want    map[string]Status // statuses after
	}{
		{"two live, one closed", func() map[string]func(*Session) {
			return map[string]func(*Session){
				"codex-1": func(s *Session) {
					s.Status, s.ThreadState, s.Turns, s.LastResult = StatusClosed, ThreadClosed, 3, "done"
				},
				"codex-2": func(s *Session) { s.Status, s.ThreadState = StatusInterrupted, ThreadClosed },
				"codex-3": func(s *Session) { s.Status = StatusInterrupted },
			}
		}, false, map[string]Status{"codex-1": StatusClosed, "codex-2": StatusInterrupted, "codex-3": StatusClosed}},
		{"an unknown session", func() map[string]func(*Session) {
			return map[string]func(*Session){
				"codex-1":    func(s *Session) { s.Status = StatusClosed },
				"codex-nope": func(s *Session) { s.Status = StatusClosed },
			}
		}, true, map[string]Status{"codex-1": StatusIdle, "codex-2": StatusBusy, "codex-3": StatusClosed}},
		{"left live", func() map[string]func(*Session) {
			return map[string]func(*Session){
				"codex-1": func(s *Session) { s.Status = StatusClosed },
				"codex-2": func(s *Session) { s.Status = StatusIdle },
			}
		}, true, map[string]Status{"codex-1": StatusIdle, "codex-2": StatusBusy, "codex-3": StatusClosed}},
		{"identity changed", func() map[string]func(*Session) {
			return map[string]func(*Session){"codex-1": func(s *Session) { s.Status, s.Identity = StatusClosed, "w9" }}
		}, true, map[string]Status{"codex-1": StatusIdle, "codex-2": StatusBusy, "codex-3": StatusClosed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testHome(t)
			clock := newFakeClock()
			r := openTest(t, "inst", clock)
			mustAdd(t, r, Session{AgentID: "codex-1", Identity: "w1", BackendID: "th-1", Status: StatusIdle, ThreadState: ThreadIdle})
			mustAdd(t, r, Session{AgentID: "codex-2", Identity: "w2", Status: StatusBusy, ThreadState: ThreadBusy})
			closed := mustAdd(t, r, Session{AgentID: "codex-3", Identity: "w3", Status: StatusClosed, ThreadState: ThreadClosed})
			before, _ := os.ReadFile(r.Path())
			clock.Advance(time.Minute)
			got, err := r.Finish(tt.fns())
			if diff := cmp.Diff(tt.want, statuses(r)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if tt.wantErr {
				after, _ := os.ReadFile(r.Path())
				if err == nil || string(after) != string(before) {
					t.Errorf("Finish = %v, want an error and the file unchanged", err)
				}
				if _, err := openTest(t, "other", nil).Add(Session{Identity: "w1"}); !errors.Is(err, ErrIdentityConflict) {
					t.Errorf("w1 was released by a failed Finish: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got["codex-1"].Turns != 3 || got["codex-1"].LastResult != "done" || got["codex-1"].BackendID != "th-1" ||
				!got["codex-1"].LastActive.Equal(clock.Now()) {
				t.Errorf("codex-1 = %+v, want its facts and the time of the finish", got["codex-1"])
			}
			if diff := cmp.Diff(closed, got["codex-3"]); diff != "" {
				t.Errorf("a closed session was changed (-before +after):\n%s", diff)
			}
			// Both identities are free, in this process and in others.
			other := openTest(t, "other", nil)
			mustAdd(t, other, Session{Identity: "w1"})
			mustAdd(t, other, Session{Identity: "w2"})
		})
	}
}
