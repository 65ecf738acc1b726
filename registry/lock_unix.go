//go:build unix

package registry

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive flock on f without blocking. It reports false if
// another open file description holds a lock on the file.
func tryLock(f *os.File) (bool, error) {
	return flock(f, unix.LOCK_EX|unix.LOCK_NB)
}

// unlock releases the flock on f.
func unlock(f *os.File) error {
	_, err := flock(f, unix.LOCK_UN)
	return err
}

func flock(f *os.File, how int) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return false, err
	}
	if errors.Is(ferr, unix.EWOULDBLOCK) {
		return false, nil
	}
	return ferr == nil, ferr
}
