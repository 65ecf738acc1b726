package proxy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestPipeIO: the client's pipes read and written with raw calls, waiting
// for an empty or full pipe, with os.File's errors once closed; a blocking
// pipe is left to os.File.
func TestPipeIO(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pr, pw := newPipeIO(r), newPipeIO(w)
	if pr == nil || pw == nil {
		t.Fatal("no pipeIO for os.Pipe")
	}
	if got, ok := pipeReader(r).(*pipeIO); !ok || got.f != r {
		t.Errorf("pipeReader(os.Pipe) = %T, want a pipeIO", got)
	}
	if sr := strings.NewReader("x"); pipeReader(sr) != io.Reader(sr) {
		t.Error("pipeReader(not a file) is not the reader")
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: more than the pipe holds
	read := make(chan []byte)
	go func() {
		b, err := io.ReadAll(pr) // small reads, waiting whenever empty
		if err != nil {
			t.Errorf("ReadAll: %v", err)
		}
		read <- b
	}()
	if n, err := pw.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write(1 MiB) = %d, %v", n, err)
	}
	if n, err := pw.Write(nil); n != 0 || err != nil {
		t.Errorf("Write(nil) = %d, %v", n, err)
	}
	w.Close()
	if got := <-read; !bytes.Equal(got, big) {
		t.Errorf("read %d bytes, want the %d written", len(got), len(big))
	}
	if _, err := pw.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close = %v, want os.ErrClosed", err)
	}
	r.Close()
	if _, err := pr.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close = %v, want os.ErrClosed", err)
	}

	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	br, bw := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer br.Close()
	defer bw.Close()
	if newPipeIO(br) != nil || pipeReader(br) != io.Reader(br) {
		t.Error("a blocking pipe got a pipeIO")
	}
}

// TestPipeIONoAllocs: the client's reader and writer allocate nothing per
// call.
func TestPipeIONoAllocs(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pr, pw := newPipeIO(r), newPipeIO(w)
	line, buf := []byte(`{"jsonrpc":"2.0","method":"codex/event"}`+"\n"), make([]byte, 256)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := pw.Write(line); err != nil {
			t.Fatal(err)
		}
		if n, err := pr.Read(buf); n != len(line) || err != nil {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per line, want 0", allocs)
	}
}
