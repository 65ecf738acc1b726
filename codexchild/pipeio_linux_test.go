package codexchild

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"
)

func newPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestPipeIONeedsNonBlocking: a raw call on a blocking pipe would block the
// processor, so a blocking pipe gets no pipeIO (and is read as it is).
func TestPipeIONeedsNonBlocking(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	if p := newPipeIO(r); p != nil {
		t.Error("newPipeIO(blocking pipe) != nil")
	}
	if got := pipeReader(r); got != io.Reader(r) {
		t.Errorf("pipeReader(blocking pipe) = %T, want the file", got)
	}
	or, _ := newPipe(t)
	if newPipeIO(or) == nil {
		t.Error("newPipeIO(os.Pipe) = nil")
	}
}

func TestPipeIOReadWrite(t *testing.T) {
	r, w := newPipe(t)
	pr, pw := newPipeIO(r), newPipeIO(w)
	done := make(chan []byte)
	go func() {
		var got bytes.Buffer
		buf := make([]byte, 3)
		for {
			n, err := pr.Read(buf) // waits in the poller while empty
			got.Write(buf[:n])
			if err == io.EOF {
				done <- got.Bytes()
				return
			}
			if err != nil {
				t.Errorf("Read: %v", err)
				done <- nil
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond) // the reader is waiting
	for _, s := range []string{"hello ", "", "pipe"} {
		n, blocked, err := pw.TryWrite([]byte(s))
		if n != len(s) || blocked || err != nil {
			t.Errorf("TryWrite(%q) = %d, %v, %v", s, n, blocked, err)
		}
	}
	w.Close()
	if got := <-done; string(got) != "hello pipe" {
		t.Errorf("read %q", got)
	}
	if n, err := pr.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v", n, err)
	}
	r.Close()
	if _, err := pr.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close = %v, want os.ErrClosed", err)
	}
	if _, _, err := pw.TryWrite([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("TryWrite after Close = %v, want os.ErrClosed", err)
	}
}

// TestPipeIOTryWriteFull: TryWrite fills the pipe and reports the rest
// blocked; with the reader gone it reports EPIPE.
func TestPipeIOTryWriteFull(t *testing.T) {
	r, w := newPipe(t)
	pw := newPipeIO(w)
	big := make([]byte, 4<<20)
	n, blocked, err := pw.TryWrite(big)
	if n <= 0 || n >= len(big) || !blocked || err != nil {
		t.Fatalf("TryWrite(4 MiB) into an unread pipe = %d, %v, %v; want part of it, blocked", n, blocked, err)
	}
	if n, blocked, err := pw.TryWrite(big[:1]); n != 0 || !blocked || err != nil {
		t.Errorf("TryWrite into a full pipe = %d, %v, %v", n, blocked, err)
	}
	r.Close()
	if _, _, err := pw.TryWrite(big[:1]); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("TryWrite without a reader = %v, want EPIPE", err)
	}
}

// TestChildWriteWaits: a write the pipe cannot take at once waits for the
// reader under stdinWriteTimeout, and that deadline does not outlive it.
func TestChildWriteWaits(t *testing.T) {
	old := stdinWriteTimeout
	stdinWriteTimeout = 300 * time.Millisecond
	t.Cleanup(func() { stdinWriteTimeout = old })
	r, w := newPipe(t)
	c := &child{stdin: w, in: newPipeIO(w), log: slog.New(slog.DiscardHandler)}
	read := make(chan int)
	go func() {
		time.Sleep(50 * time.Millisecond) // the pipe fills up first
		n, _ := io.Copy(io.Discard, r)
		read <- int(n)
	}()
	big := make([]byte, 2<<20)
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write(2 MiB) = %d, %v", n, err)
	}
	time.Sleep(2 * stdinWriteTimeout)
	if n, err := c.Write([]byte("later\n")); n != 6 || err != nil {
		t.Fatalf("a later Write = %d, %v (the deadline of the blocked write must not stay)", n, err)
	}
	w.Close()
	if got := <-read; got != len(big)+6 {
		t.Errorf("the reader got %d bytes, want %d", got, len(big)+6)
	}
}

// TestPipeIONoAllocs: the reader and the writer of every line allocate
// nothing per call.
func TestPipeIONoAllocs(t *testing.T) {
	r, w := newPipe(t)
	pr, pw := newPipeIO(r), newPipeIO(w)
	line, buf := []byte(`{"jsonrpc":"2.0","method":"codex/event"}`+"\n"), make([]byte, 256)
	allocs := testing.AllocsPerRun(100, func() {
		if _, blocked, err := pw.TryWrite(line); blocked || err != nil {
			t.Fatal(blocked, err)
		}
		if n, err := pr.Read(buf); n != len(line) || err != nil {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per line, want 0", allocs)
	}
}
