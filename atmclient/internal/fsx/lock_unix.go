//go:build unix

package fsx

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// maxPoll caps the sleep between two attempts to take a busy lock.
const maxPoll = 2 * time.Millisecond

// Lock takes an exclusive flock(2) on the file at path, creating it (mode
// 0600) if needed; the file itself is never replaced or removed. While the
// lock is busy Lock polls with LOCK_NB, sleeping 1 ms at first and at most
// 2 ms (with jitter), until timeout has passed (then ErrLockTimeout)
// or ctx is done. Closing the returned file releases the lock.
func Lock(ctx context.Context, path string, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return f, nil
		case errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EWOULDBLOCK):
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			f.Close()
			return nil, fmt.Errorf("%w: %s held by another writer for %v", ErrLockTimeout, path, timeout)
		}
		sleep := min(delay/2+rand.N(delay), left)
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, maxPoll)
	}
}
