package jsonrpcframe

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// NewPipe returns a Pipe for f, or nil when f is not in non-blocking mode
// (as os.Pipe and exec's StdinPipe/StdoutPipe make them): a raw call could
// then block the processor. Nothing may call f.Fd() afterwards, which puts
// the file in blocking mode.
func NewPipe(f *os.File) *Pipe {
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
	p := &Pipe{f: f, rc: rc}
	p.readFn, p.writeFn = p.readOnce, p.writeOnce
	return p
}

// Read reads like os.File.Read.
func (p *Pipe) Read(b []byte) (int, error) {
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

// readOnce is one attempt of Read; false means wait in the poller.
func (p *Pipe) readOnce(fd uintptr) bool {
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
			if p.empty != nil {
				p.empty()
			}
			return false
		}
		p.rerr = &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
		return true
	}
}

func (p *Pipe) write(b []byte, wait bool) (int, bool, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.wb, p.wn, p.wait, p.blocked, p.werr = b, 0, wait, false, nil
	err := p.rc.Write(p.writeFn)
	n, blocked, werr := p.wn, p.blocked, p.werr
	p.wb, p.werr = nil, nil
	if err != nil {
		// Closed: os.File reports it in its own words.
		m, err := p.f.Write(b[n:])
		return n + m, false, err
	}
	return n, blocked, werr
}

// writeOnce is one attempt of a write; false means wait in the poller.
func (p *Pipe) writeOnce(fd uintptr) bool {
	for p.wn < len(p.wb) {
		r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p.wb[p.wn])), uintptr(len(p.wb)-p.wn))
		switch errno {
		case 0:
			p.wn += int(r)
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if p.wait {
				return false
			}
			p.blocked = true
			return true
		}
		p.werr = &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
		return true
	}
	return true
}
