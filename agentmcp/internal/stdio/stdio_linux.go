package stdio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Pollable gives serve its own non-blocking handles on stdin and
// stdout when they are pipes (as when Claude starts the proxy), so that
// reading the client and writing to it go through Go's poller instead of
// blocking system calls, and so that the proxy can tell how much the
// client's pipe takes before it writes an event (events never wait for the
// client). Opening /proc/self/fd/N opens the pipe anew: the non-blocking
// flag is set on the proxy's own open file, never on the one it shares with
// its parent. Anything that is not a pipe, or cannot be reopened, is used
// as it is. The returned function closes the new handles.
func Pollable(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer, func()) {
	var closers []*os.File
	in, out := stdin, stdout
	if f := reopenPipe(stdin, os.O_RDONLY); f != nil {
		in = f
		closers = append(closers, f)
	}
	if f := reopenPipe(stdout, os.O_WRONLY); f != nil {
		out = f
		closers = append(closers, f)
	}
	return in, out, func() {
		for _, f := range closers {
			f.Close()
		}
	}
}

// reopenPipe reopens v's pipe with flag, or returns nil.
func reopenPipe(v any, flag int) *os.File {
	f, ok := v.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var fd uintptr
	if rc.Control(func(d uintptr) { fd = d }) != nil {
		return nil
	}
	// O_NONBLOCK also keeps the open itself from waiting: a named FIFO
	// whose other end is gone would block it (then the handle is used as
	// it is).
	nf, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	return nf
}

// LogWriter returns what a logger writing to w (stderr) should write to:
// when w is a pipe, a [jsonrpcframe.Pipe] on a non-blocking handle of its
// own, so that a log line is a raw system call. A plain one (os.File's) wakes
// the Go runtime's monitor thread after an idle spell, which then polls
// every 20 µs while the process is busy; serve logs a line for every line
// of Codex's stderr, several per turn. The returned function closes the
// handle; a line written after it (a goroutine logging on its way out)
// goes to w as before, so none is lost. Anything else is returned as it is.
func LogWriter(w io.Writer) (io.Writer, func()) {
	f := reopenPipe(w, os.O_WRONLY)
	if f == nil {
		return w, func() {}
	}
	p := jsonrpcframe.NewPipe(f)
	if p == nil {
		f.Close()
		return w, func() {}
	}
	return logPipe{p: p, w: w}, func() { f.Close() }
}

// logPipe writes through p, and to w once p's handle is closed.
type logPipe struct {
	p *jsonrpcframe.Pipe
	w io.Writer
}

func (l logPipe) Write(b []byte) (int, error) {
	n, err := l.p.Write(b)
	if errors.Is(err, os.ErrClosed) {
		m, err := l.w.Write(b[n:])
		return n + m, err
	}
	return n, err
}
