package codexchild

import (
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// pipeIO reads and writes a non-blocking pipe with raw system calls; a
// read waits in Go's poller when the pipe is empty.
//
// os.File treats each read and write as a system call that may block: the
// runtime marks the goroutine's processor as in a system call and back,
// hands the processor to another thread when the call takes long, and the
// first such call after the process was idle wakes the runtime's monitor
// thread (sysmon), which then polls every 20 µs while the process is busy.
// A call on a non-blocking pipe never blocks, so none of that is needed, and
// the child's pipes carry every line of every turn.
type pipeIO struct {
	f  *os.File
	rc syscall.RawConn

	// The state of the read and of the write in progress, and the
	// functions RawConn calls with the descriptor, bound once: a closure
	// per call would be allocated on every read and write.
	rmu    sync.Mutex
	rb     []byte
	rn     int
	rerr   error
	readFn func(fd uintptr) bool

	wmu     sync.Mutex
	wb      []byte
	wn      int
	blocked bool
	werr    error
	writeFn func(fd uintptr) bool
}

// newPipeIO returns a pipeIO for f, or nil when f is not in non-blocking
// mode (a raw call could then block the processor). Nothing may call f.Fd()
// afterwards: it puts the file in blocking mode.
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
	p := &pipeIO{f: f, rc: rc}
	p.readFn, p.writeFn = p.read, p.write
	return p
}

// pipeReader returns a pipeIO reading f, or f itself when it has none.
func pipeReader(f *os.File) io.Reader {
	if p := newPipeIO(f); p != nil {
		return p
	}
	return f
}

// Read reads like os.File.Read.
func (p *pipeIO) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	p.rb, p.rn, p.rerr = b, 0, nil
	err := p.rc.Read(p.readFn)
	n, rerr := p.rn, p.rerr
	p.rb, p.rerr = nil, nil
	if err != nil {
		// Closed: os.File reports it in its own words.
		return p.f.Read(b)
	}
	return n, rerr
}

// read is one attempt of Read; false means wait in the poller.
func (p *pipeIO) read(fd uintptr) bool {
	for {
		r, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p.rb[0])), uintptr(len(p.rb)))
		switch errno {
		case 0:
			if p.rn = int(r); p.rn == 0 {
				p.rerr = io.EOF
			}
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		p.rerr = &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
		return true
	}
}

// TryWrite writes what the pipe takes now, without waiting; blocked
// reports that the pipe was full before all of b was written. Errors are
// os.File's.
func (p *pipeIO) TryWrite(b []byte) (n int, blocked bool, err error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.wb, p.wn, p.blocked, p.werr = b, 0, false, nil
	rerr := p.rc.Write(p.writeFn)
	n, blocked, err = p.wn, p.blocked, p.werr
	p.wb, p.werr = nil, nil
	if rerr != nil {
		// Closed: os.File reports it in its own words, without waiting.
		m, err := p.f.Write(b[n:])
		return n + m, false, err
	}
	return n, blocked, err
}

// write is one attempt of TryWrite; it never waits.
func (p *pipeIO) write(fd uintptr) bool {
	for p.wn < len(p.wb) {
		r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p.wb[p.wn])), uintptr(len(p.wb)-p.wn))
		switch errno {
		case 0:
			p.wn += int(r)
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			p.blocked = true
			return true
		}
		p.werr = &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
		return true
	}
	return true
}
