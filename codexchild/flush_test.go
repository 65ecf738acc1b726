package codexchild

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// countFlusher counts its Flush calls.
type countFlusher struct {
	recorder
	n int
}

func (c *countFlusher) Flush() { c.n++ }

// TestFlushSet: each Flusher that had events is flushed once per flush,
// however many events it had; handlers that are no Flushers are skipped.
func TestFlushSet(t *testing.T) {
	var s flushSet
	a, b := &countFlusher{}, &countFlusher{}
	ta, tb := &turn{}, &turn{}
	s.note(ta, a)
	s.note(ta, a)
	s.note(tb, b)
	s.note(&turn{}, newRecorder(nil)) // not a Flusher
	s.flush()
	s.flush() // nothing noted since
	s.note(tb, b)
	s.flush()
	if a.n != 1 || b.n != 2 {
		t.Errorf("flushes: a %d, b %d; want 1, 2", a.n, b.n)
	}
}

// TestIdleReader: a reader that is not a jsonrpcframe.Pipe calls idle
// before every read, since it cannot tell whether the read will wait.
func TestIdleReader(t *testing.T) {
	var calls []int
	read := 0
	r := idleReader(io.LimitReader(strings.NewReader("abcdef"), 6), func() { calls = append(calls, read) })
	buf := make([]byte, 4)
	for {
		n, err := r.Read(buf)
		read += n
		if err != nil {
			break
		}
	}
	if diff := cmp.Diff([]int{0, 4, 6}, calls); diff != "" {
		t.Errorf("bytes read when idle was called (-want +got):\n%s", diff)
	}
	plain := strings.NewReader("x")
	if got := idleReader(plain, nil); got != io.Reader(plain) {
		t.Errorf("idleReader(r, nil) = %T, want r itself", got)
	}
}
