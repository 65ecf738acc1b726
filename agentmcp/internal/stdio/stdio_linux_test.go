package stdio

import (
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
)

// nonblocking reports whether f's open file has O_NONBLOCK.
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	if err := rc.Control(func(fd uintptr) {
		flags, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}); err != nil {
		t.Fatal(err)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// TestPollable: blocking stdio pipes (as a parent hands them over) are
// reopened non-blocking for the proxy alone; data and end of input pass as
// before; what is not a pipe is left alone.
func TestPollable(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR.Fd() // blocking, like a real stdin
	outW.Fd()
	in, out, release := Pollable(inR, outW)
	defer release()
	fin, ok1 := in.(*os.File)
	fout, ok2 := out.(*os.File)
	if !ok1 || !ok2 || fin == inR || fout == outW {
		t.Fatalf("stdio not reopened: %T %T", in, out)
	}
	if !nonblocking(t, fin) || !nonblocking(t, fout) {
		t.Error("the reopened handles are blocking")
	}
	if nonblocking(t, inR) || nonblocking(t, outW) {
		t.Error("the parent's open files were made non-blocking")
	}

	if _, err := inW.Write([]byte("request\n")); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	got, err := io.ReadAll(in)
	if err != nil || string(got) != "request\n" {
		t.Errorf("read %q, %v; want the request, then end of input", got, err)
	}
	if _, err := out.Write([]byte("answer\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _ := outR.Read(buf)
	if string(buf[:n]) != "answer\n" {
		t.Errorf("client read %q", buf[:n])
	}

	// Not pipes: used as they are.
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in2, out2, release2 := Pollable(io.MultiReader(), f)
	defer release2()
	if out2 != io.Writer(f) || in2 == nil {
		t.Error("a regular file was reopened")
	}
}

// TestLogWriter: a blocking stderr pipe gets a raw-writing Pipe on a
// non-blocking handle of the logger's own; lines arrive whole and in order,
// also one written after the handle is closed; what is not a pipe is
// written to as it is.
func TestLogWriter(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.Fd() // blocking, like a real stderr
	lw, release := LogWriter(w)
	if lp, ok := lw.(logPipe); !ok || lp.p == nil {
		t.Fatalf("LogWriter(stderr pipe) = %T, want a logPipe on a *jsonrpcframe.Pipe", lw)
	}
	if nonblocking(t, w) {
		t.Error("the parent's open file was made non-blocking")
	}
	lines := []string{"time=1 level=INFO msg=one\n", "time=2 level=INFO msg=two\n", "time=3 level=INFO msg=late\n"}
	for i, l := range lines {
		if i == len(lines)-1 {
			release() // the last line comes after serve has returned
		}
		if _, err := lw.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != strings.Join(lines, "") {
		t.Errorf("read %q, %v; want %q", got, err, strings.Join(lines, ""))
	}

	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf strings.Builder
	for _, plain := range []io.Writer{f, &buf} {
		got, release := LogWriter(plain)
		release()
		if got != plain {
			t.Errorf("LogWriter(%T) = %T, want it as it is", plain, got)
		}
	}
}
