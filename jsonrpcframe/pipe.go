package jsonrpcframe

import (
	"io"
	"os"
	"sync"
	"syscall"
)

// Pipe reads and writes one end of an OS pipe for a [Reader] or [Writer]
// over stdio (an MCP server's stdin and stdout, a child's pipes): pass it
// where the *os.File would go. It is safe for one reader and one writer at
// a time; Read and Write are each serialised.
//
// On Linux it does each read and write as a raw system call on the
// non-blocking pipe and waits in Go's poller only when the pipe is empty
// (or full). os.File treats every call as one that may block: the runtime
// marks the processor as in a system call and back, hands it to another
// thread when the call takes long, and the first such call after an idle
// spell wakes the runtime's monitor thread, which then polls every 20 µs
// while the process is busy. None of that is needed for a call that cannot
// block. Elsewhere a Pipe uses the file's own I/O.
type Pipe struct {
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
	empty  func() // OnEmpty's function, or nil

	wmu     sync.Mutex
	wb      []byte
	wn      int
	wait    bool // Write waits in the poller; TryWrite does not
	blocked bool
	werr    error
	writeFn func(fd uintptr) bool
}

// Write writes all of b like os.File.Write, waiting while the pipe is full.
func (p *Pipe) Write(b []byte) (int, error) {
	n, _, err := p.write(b, true)
	return n, err
}

// TryWrite writes what the pipe takes now without waiting; blocked reports
// that it took less than all of b (the caller may then Write the rest,
// under a deadline of its own). Where it cannot tell without waiting
// (outside Linux) it writes nothing and reports blocked.
func (p *Pipe) TryWrite(b []byte) (n int, blocked bool, err error) {
	return p.write(b, false)
}

// OnEmpty makes Read call fn whenever it finds the pipe empty, before it
// waits for data; outside Linux, where that cannot be told without
// waiting, before every read. A reader that passes on what it reads in
// batches (one write for several messages) flushes them in fn: it then
// holds nothing back while there is nothing more to read. fn runs on the
// goroutine calling Read, while Read holds the pipe; it must not use p. Set
// it before the first Read.
func (p *Pipe) OnEmpty(fn func()) { p.empty = fn }

// PipeReader returns a Pipe reading f when [NewPipe] gives one, else f.
func PipeReader(f *os.File) io.Reader {
	if p := NewPipe(f); p != nil {
		return p
	}
	return f
}
