package mcpconn

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// fGetPipeSz is F_GETPIPE_SZ: a pipe's capacity (Linux 2.6.35+).
const fGetPipeSz = 1032

// pipeGauge writes to a pipe and tells how much more it takes without
// blocking: the pipe's capacity less what its reader has not read yet
// (FIONREAD), measured now and then and lowered by every byte written since
// (counted before the write, so the estimate only errs low).
type pipeGauge struct {
	w        io.Writer // the pipe, or its jsonrpcframe.Pipe
	rc       syscall.RawConn
	capacity int
	written  atomic.Int64 // bytes handed to the pipe so far

	// has is called by one goroutine at a time, the holder of the
	// outbox's writing claim (or of its emu, while nobody holds the claim):
	// room and base need no lock of their own.
	room int   // room at the last measure
	base int64 // written at the last measure
}

// newPipeGauge returns a gauge for w, or nil when w is not a pipe.
func newPipeGauge(w io.Writer) *pipeGauge {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn() // unlike Fd, keeps the file non-blocking
	if err != nil {
		return nil
	}
	capacity := 0
	err = rc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			return
		}
		if n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, fGetPipeSz, 0); errno == 0 {
			capacity = int(n)
		}
	})
	if err != nil || capacity <= 0 {
		return nil
	}
	g := &pipeGauge{w: f, rc: rc, capacity: capacity}
	if p := jsonrpcframe.NewPipe(f); p != nil {
		g.w = p
	}
	return g
}

func (g *pipeGauge) Write(p []byte) (int, error) {
	g.written.Add(int64(len(p)))
	return g.w.Write(p)
}

// has reports whether the pipe surely takes n more bytes without blocking.
func (g *pipeGauge) has(n int) bool {
	written := g.written.Load()
	if g.room-int(written-g.base) >= n {
		return true
	}
	var unread int32
	var errno syscall.Errno
	if err := g.rc.Control(func(fd uintptr) {
		// Raw: the ioctl never blocks (see jsonrpcframe.Pipe).
		_, _, errno = syscall.RawSyscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&unread)))
	}); err != nil || errno != 0 {
		return false
	}
	g.room, g.base = g.capacity-int(unread), written
	return g.room >= n
}
