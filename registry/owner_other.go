//go:build !linux

package registry

// holds reports whether process pid runs. Without a portable way to list
// another process's open files, a running process with the holder's pid is
// taken as holding the lock.
func holds(pid int, _ string) bool { return signalAlive(pid) }
