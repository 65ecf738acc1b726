package fsx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"
)

// DirLockStale is the age of its modification time after which a lock
// directory counts as abandoned and is removed by whoever wants the lock:
// the default of the proper-lockfile clone in Claude Code.
const DirLockStale = 10 * time.Second

// dirLockRefresh is how often a holder renews its lock directory's
// modification time, so that a long hold never looks abandoned.
var dirLockRefresh = DirLockStale / 2

// LockDir takes Claude Code's lock at path: a directory made with mkdir
// (mode 0700), held while it exists. While mkdir fails because the
// directory exists, LockDir polls every 1 to 2 ms (with jitter); a
// directory whose modification time is more than DirLockStale old is
// removed as abandoned and the lock taken at once. It gives up after
// timeout (ErrLockTimeout) or when ctx is done. While held, the
// directory's modification time is renewed every DirLockStale/2. Closing
// the returned Closer removes the directory; it is safe to call more than
// once.
//
// Taking over a stale lock has a race of its own, as in Claude Code: two
// processes that find the same stale directory at the same moment may
// both take the lock. LockDir narrows it by removing the directory only
// when it is still the same stale one just before the removal.
func LockDir(ctx context.Context, path string, timeout time.Duration) (io.Closer, error) {
	err := poll(ctx, path, timeout, func() (bool, error) {
		// Try again at once after a stale lock was removed (or its holder
		// released it meanwhile), a few times.
		for range 3 {
			err := os.Mkdir(path, 0o700)
			if err == nil {
				return true, nil
			}
			if !errors.Is(err, fs.ErrExist) {
				return false, err
			}
			removed, err := removeStale(path)
			if err != nil {
				return false, fmt.Errorf("remove stale lock: %w", err)
			}
			if !removed {
				return false, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return newDirLock(path), nil
}

// removeStale removes the lock directory at path if it is older than
// DirLockStale. removed is true when it is gone (by us or its holder).
func removeStale(path string) (removed bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if time.Since(fi.ModTime()) <= DirLockStale {
		return false, nil
	}
	again, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil || !os.SameFile(fi, again) || !again.ModTime().Equal(fi.ModTime()) {
		return false, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// dirLock is a held lock directory.
type dirLock struct {
	path string
	stop chan struct{}
	done chan struct{}
	once sync.Once
	err  error
}

func newDirLock(path string) *dirLock {
	l := &dirLock{path: path, stop: make(chan struct{}), done: make(chan struct{})}
	go l.refresh()
	return l
}

// refresh renews the directory's modification time until Close.
func (l *dirLock) refresh() {
	defer close(l.done)
	t := time.NewTicker(dirLockRefresh)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			os.Chtimes(l.path, now, now)
		}
	}
}

// Close stops the refresh and removes the lock directory.
func (l *dirLock) Close() error {
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.err = fmt.Errorf("unlock %s: %w", l.path, err)
		}
	})
	return l.err
}
