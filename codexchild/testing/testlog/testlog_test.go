package testlog_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/testlog"
	"github.com/google/go-cmp/cmp"
)

func TestRecorderRunsCleanupsLastFirst(t *testing.T) {
	rec := testlog.NewRecorder(t)
	var got []int
	for i := range 3 {
		rec.Cleanup(func() { got = append(got, i) })
	}
	if rec.Failed() {
		t.Fatal("Failed before any error")
	}
	rec.RunCleanups()
	rec.RunCleanups() // once only
	if diff := cmp.Diff([]int{2, 1, 0}, got); diff != "" {
		t.Errorf("cleanup order (-want +got):\n%s", diff)
	}
}

func TestBufferConcurrentWrites(t *testing.T) {
	var b testlog.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 800 {
		t.Errorf("len = %d, want 800", got)
	}
}

// spy is a Recorder that keeps what is logged.
type spy struct {
	*testlog.Recorder
	logs []string
}

func (s *spy) Logf(format string, args ...any) { s.logs = append(s.logs, fmt.Sprintf(format, args...)) }

func TestLoggerShowsOnFailureOrWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fail   bool
		env    string
		wantIt bool
	}{
		{"passing", false, "", false},
		{"failing", true, "", true},
		{"asked", false, "1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TESTLOG_SHOW", tc.env)
			s := &spy{Recorder: testlog.NewRecorder(t)}
			testlog.Logger(s, "TESTLOG_SHOW").Info("hello", "k", 1)
			if tc.fail {
				s.Errorf("boom")
			}
			s.RunCleanups()
			got := len(s.logs) == 1 && strings.Contains(s.logs[0], "msg=hello k=1")
			if got != tc.wantIt || !tc.wantIt && len(s.logs) != 0 {
				t.Errorf("logs = %q, want shown: %v", s.logs, tc.wantIt)
			}
		})
	}
}
