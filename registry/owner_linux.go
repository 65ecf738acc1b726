package registry

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// holds reports whether process pid runs and has the lock file open: the
// process exists in /proc, is not a zombie (a killed process its parent
// has not reaped yet) and one of its file descriptors is the lock file.
// When its descriptors cannot be read (a process of another user), that
// it runs is taken as holding.
func holds(pid int, lock string) bool {
	if pid <= 0 {
		return false
	}
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(proc, "stat"))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return signalAlive(pid)
	}
	if dead(stat) {
		return false
	}
	want, err := os.Stat(lock)
	if err != nil {
		return false // no lock file: nobody holds it
	}
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) // gone meanwhile, or not ours to read
	}
	for _, fd := range fds {
		if fi, err := os.Stat(filepath.Join(proc, "fd", fd.Name())); err == nil && os.SameFile(fi, want) {
			return true
		}
	}
	return false
}

// dead reports whether a /proc/{pid}/stat line is of a process that has
// ended: a zombie (Z) or one being reaped (X, x). The state follows the
// command name, which is in parentheses and may itself contain them.
func dead(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	switch stat[i+2] {
	case 'Z', 'X', 'x':
		return true
	}
	return false
}
