//go:build !unix

package fsx

import (
	"context"
	"errors"
	"os"
	"time"
)

// Lock is not supported on this platform: flock(2) is Unix-only.
func Lock(ctx context.Context, path string, timeout time.Duration) (*os.File, error) {
	return nil, errors.ErrUnsupported
}
