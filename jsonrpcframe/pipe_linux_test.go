package jsonrpcframe

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

func newOSPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestPipeNeedsNonBlocking: a raw call on a blocking pipe would block the
// processor, so a blocking pipe gets no Pipe (and is read as it is).
func TestPipeNeedsNonBlocking(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	if NewPipe(r) != nil || NewPipe(w) != nil {
		t.Error("NewPipe(blocking pipe) != nil")
	}
	if got := PipeReader(r); got != io.Reader(r) {
		t.Errorf("PipeReader(blocking pipe) = %T, want the file", got)
	}
	or, _ := newOSPipe(t)
	if _, ok := PipeReader(or).(*Pipe); !ok {
		t.Error("PipeReader(os.Pipe) is not a Pipe")
	}
}

// TestPipeReadWrite: small reads waiting while the pipe is empty, a write
// of more than the pipe holds waiting while it is full, EOF, and os.File's
// errors once closed.
func TestPipeReadWrite(t *testing.T) {
	r, w := newOSPipe(t)
	pr, pw := NewPipe(r), NewPipe(w)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	read := make(chan []byte)
	go func() {
		var got bytes.Buffer
		buf := make([]byte, 3)
		for {
			n, err := pr.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				read <- got.Bytes()
				return
			}
			if err != nil {
				t.Errorf("Read: %v", err)
				read <- nil
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond) // the reader waits in the poller
	if n, err := pw.Write([]byte("hello ")); n != 6 || err != nil {
		t.Errorf("Write = %d, %v", n, err)
	}
	if n, err := pw.Write(nil); n != 0 || err != nil {
		t.Errorf("Write(nil) = %d, %v", n, err)
	}
	if n, err := pw.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write(1 MiB) = %d, %v", n, err)
	}
	w.Close()
	if got := <-read; !bytes.Equal(got, append([]byte("hello "), big...)) {
		t.Errorf("read %d bytes, want %d", len(got), len(big)+6)
	}
	if n, err := pr.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v", n, err)
	}
	if _, err := pw.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close = %v, want os.ErrClosed", err)
	}
	if _, _, err := pw.TryWrite([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("TryWrite after Close = %v, want os.ErrClosed", err)
	}
	r.Close()
	if _, err := pr.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close = %v, want os.ErrClosed", err)
	}
}

// TestPipeTryWriteFull: TryWrite fills the pipe and reports the rest
// blocked without waiting; with the reader gone it reports EPIPE.
// TestPipeOnEmpty: Read calls the OnEmpty function only when it finds the
// pipe empty, before it waits; data written there ends the wait.
func TestPipeOnEmpty(t *testing.T) {
	r, w := newOSPipe(t)
	pr := NewPipe(r)
	var calls int
	pr.OnEmpty(func() {
		calls++
		if _, err := w.Write([]byte("later")); err != nil {
			t.Error(err)
		}
	})
	if _, err := w.Write([]byte("now")); err != nil {
		t.Fatal(err)
	}
	// Without the call, the second Read fails here instead of hanging.
	if err := r.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	for _, want := range []struct {
		data  string
		calls int
	}{{"now", 0}, {"later", 1}} {
		n, err := pr.Read(buf)
		if got := string(buf[:n]); got != want.data || err != nil || calls != want.calls {
			t.Errorf("Read = %q, %v with %d OnEmpty calls; want %q with %d", got, err, calls, want.data, want.calls)
		}
	}
}

func TestPipeTryWriteFull(t *testing.T) {
	r, w := newOSPipe(t)
	pw := NewPipe(w)
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

// TestPipeNoAllocs: reading and writing a line allocates nothing.
func TestPipeNoAllocs(t *testing.T) {
	r, w := newOSPipe(t)
	pr, pw := NewPipe(r), NewPipe(w)
	line, buf := []byte(`{"jsonrpc":"2.0","method":"codex/event"}`+"\n"), make([]byte, 256)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := pw.Write(line); err != nil {
			t.Fatal(err)
		}
		if n, blocked, err := pw.TryWrite(line); n != len(line) || blocked || err != nil {
			t.Fatal(n, blocked, err)
		}
		if n, err := io.ReadFull(pr, buf[:2*len(line)]); n != 2*len(line) || err != nil {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per line, want 0", allocs)
	}
}
