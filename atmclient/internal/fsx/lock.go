package fsx

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gofrs/flock"
)

// maxPoll caps the sleep between two attempts to take a busy lock.
const maxPoll = 2 * time.Millisecond

// Lock takes an exclusive lock (github.com/gofrs/flock: flock(2) on Unix,
// as the atm CLI takes it, LockFileEx on Windows) on the file at path,
// creating it (mode 0600) if needed; the file itself is never replaced or
// removed. While the lock is busy Lock polls, as the atm CLI does, sleeping
// 1 ms at first and at most 2 ms (with jitter), until timeout has passed
// (then ErrLockTimeout) or ctx is done. Closing the returned Closer
// releases the lock.
func Lock(ctx context.Context, path string, timeout time.Duration) (io.Closer, error) {
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	err := poll(ctx, path, timeout, fl.TryLock)
	if err != nil {
		return nil, err
	}
	return fl, nil
}

// poll calls try until it takes the lock at path (true), fails, timeout
// has passed (ErrLockTimeout) or ctx is done, sleeping 1 ms at first and
// then at most maxPoll (with jitter) between two calls.
func poll(ctx context.Context, path string, timeout time.Duration, try func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		ok, err := try()
		switch {
		case err != nil:
			return fmt.Errorf("lock %s: %w", path, err)
		case ok:
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w: %s held by another writer for %v", ErrLockTimeout, path, timeout)
		}
		sleep := min(delay/2+rand.N(delay), left)
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, maxPoll)
	}
}
