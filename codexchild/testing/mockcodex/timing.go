package mockcodex

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"time"
)

// timing is the MOCKCODEX_TIMING file: two little-endian int64 wall-clock
// times in Unix nanoseconds, overwritten in place. Bytes 0–8 hold when the
// last request was read (its line parsed), bytes 8–16 when the last
// response was about to be written. A benchmark that sends one request at a
// time reads them after each call to tell the child's own time from the
// time on the way in and out (the wall clock is the one clock two processes
// share). A nil *timing records nothing.
type timing struct {
	mu  sync.Mutex
	f   *os.File
	buf [8]byte
}

// Offsets of the two times in the file.
const (
	timingRequestRead   = 0
	timingResponseWrite = 8
)

// openTiming opens (creating it) the MOCKCODEX_TIMING file. It returns nil
// when path is empty, and nil with the error when the file cannot be
// opened.
func openTiming(path string) (*timing, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("MOCKCODEX_TIMING: %w", err)
	}
	return &timing{f: f}, nil
}

// mark writes the wall-clock time now at off.
func (t *timing) mark(off int64) {
	if t == nil {
		return
	}
	now := time.Now().UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	binary.LittleEndian.PutUint64(t.buf[:], uint64(now))
	_, _ = t.f.WriteAt(t.buf[:], off)
}

func (t *timing) close() {
	if t != nil {
		_ = t.f.Close()
	}
}
