package agentmcp

import (
	"io"
	"os"
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

// TestPollableStdio: blocking stdio pipes (as a parent hands them over) are
// reopened non-blocking for the proxy alone; data and end of input pass as
// before; what is not a pipe is left alone.
func TestPollableStdio(t *testing.T) {
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
	in, out, release := pollableStdio(inR, outW)
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
	in2, out2, release2 := pollableStdio(io.MultiReader(), f)
	defer release2()
	if out2 != io.Writer(f) || in2 == nil {
		t.Error("a regular file was reopened")
	}
}
