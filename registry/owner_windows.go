package registry

import "os"

// signalAlive reports whether a process with pid exists: Windows opens a
// handle only to a process that exists.
func signalAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
