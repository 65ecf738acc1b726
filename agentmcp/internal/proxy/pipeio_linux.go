package proxy

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// pipeIO reads and writes a non-blocking pipe (the client's stdin and
// stdout, as serve reopens them) with raw system calls, waiting in Go's
// poller only when the pipe is empty or full.
//
// os.File treats each read and write as a system call that may block: the
// runtime marks the goroutine's processor as in a system call and back,
// hands the processor to another thread when the call takes long, and the
// first such call after the process was idle wakes the runtime's monitor
// thread (sysmon), which then polls every 20 µs while the process is busy.
// A call on a non-blocking pipe never blocks, so none of that is needed, and
// the client's pipes carry every request, event and answer.
type pipeIO struct {
	f  *os.File
	rc syscall.RawConn
}

// newPipeIO returns a pipeIO for f, or nil when f is not in non-blocking
// mode (a raw call could then block the processor).
func newPipeIO(f *os.File) *pipeIO {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	if rc.Control(func(fd uintptr) {
		flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblocking = errno == 0 && flags&syscall.O_NONBLOCK != 0
	}) != nil || !nonblocking {
		return nil
	}
	return &pipeIO{f: f, rc: rc}
}

// pipeReader returns a pipeIO reading r when r is a non-blocking pipe,
// else r.
func pipeReader(r io.Reader) io.Reader {
	if f, ok := r.(*os.File); ok {
		if p := newPipeIO(f); p != nil {
			return p
		}
	}
	return r
}

// Read reads like os.File.Read.
func (p *pipeIO) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch errno {
			case 0:
				if n = int(r); n == 0 {
					rerr = io.EOF
				}
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			}
			rerr = &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
			return true
		}
	})
	if err != nil {
		// Closed: os.File reports it in its own words.
		return p.f.Read(b)
	}
	return n, rerr
}

// Write writes all of b like os.File.Write, waiting in the poller while
// the pipe is full.
func (p *pipeIO) Write(b []byte) (int, error) {
	var n int
	var werr error
	err := p.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch errno {
			case 0:
				n += int(r)
				continue
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			}
			werr = &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
			return true
		}
		return true
	})
	if err != nil {
		m, err := p.f.Write(b[n:])
		return n + m, err
	}
	return n, werr
}
