package childproc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/guard"
)

// SetParentDeathSignal has the kernel send the guard guard.ParentDeathSignal
// when its parent dies.
func SetParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = guard.ParentDeathSignal }

// forker is the goroutine, locked to an OS thread that lives as long as the
// process, that starts guarded children. Linux sends the parent-death
// signal when the *thread* that forked the child ends, and Go ends threads
// now and then: a child forked from one of those would get the signal while
// the proxy lives on.
var forker struct {
	once sync.Once
	reqs chan forkRequest
}

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// StartFromLastingThread runs cmd.Start on the forker's thread.
func StartFromLastingThread(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range forker.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	forker.reqs <- forkRequest{cmd: cmd, done: done}
	return <-done
}
