package testlog

import (
	"bytes"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// Logger returns a debug-level text logger whose output tb shows at
// cleanup when the test failed, or always when the environment variable
// show is set ("" never shows a passing test's log).
func Logger(tb testing.TB, show string) *slog.Logger {
	b := &Buffer{}
	tb.Cleanup(func() {
		if tb.Failed() || show != "" && os.Getenv(show) != "" {
			tb.Logf("log:\n%s", b.String())
		}
	})
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Buffer is a bytes.Buffer that many goroutines may write at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
