package testscripts

import (
	"os"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdFlock holds or releases an exclusive flock on a file, as another ATM
// writer would:
//
//	flock hold PATH
//	flock release PATH
func cmdFlock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flock hold|release PATH")
	}
	path := ts.MkAbs(args[1])
	held := ts.Value("flocks").(map[string]*os.File)
	switch args[0] {
	case "hold":
		if held[path] != nil {
			ts.Fatalf("flock: %s is already held", args[1])
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		ts.Check(err)
		ts.Check(syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
		held[path] = f
		ts.Defer(func() { f.Close() })
	case "release":
		f := held[path]
		if f == nil {
			ts.Fatalf("flock: %s is not held", args[1])
		}
		ts.Check(syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
		f.Close()
		delete(held, path)
	default:
		ts.Fatalf("usage: flock hold|release PATH")
	}
}
