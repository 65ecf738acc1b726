package atmclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient/internal/fsx"
)

// lockBoth takes, in this order and within one Config.LockTimeout, the
// two locks other writers of a file take (package documentation, "Design
// notes"): the atm CLI's flock on flockPath, then Claude Code's lock
// directory dirPath. prepare, when not nil, runs between the two (an inbox
// must exist before Claude Code can lock it). unlock releases both in the
// reverse order; it is called on every path that took them.
func (c *Client) lockBoth(ctx context.Context, flockPath, dirPath string, prepare func() error) (unlock func(), err error) {
	deadline := time.Now().Add(c.lockTimeout)
	fl, err := fsx.Lock(ctx, flockPath, c.lockTimeout)
	if err != nil {
		return nil, err
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			fl.Close()
			return nil, err
		}
	}
	if c.flockOnly {
		return func() { fl.Close() }, nil
	}
	dl, err := fsx.LockDir(ctx, dirPath, max(time.Until(deadline), 0))
	if err != nil {
		fl.Close()
		return nil, err
	}
	return func() {
		if err := dl.Close(); err != nil {
			c.log.Warn("cannot remove the lock directory; Claude Code will wait until it is stale (10 s)", "path", dirPath, "err", err)
		}
		fl.Close()
	}, nil
}

// createEmpty creates the file at path holding "[]" unless it exists, as
// Claude Code does before it locks an inbox (O_CREATE|O_EXCL, mode 0600).
func createEmpty(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create inbox: %w", err)
	}
	_, err = f.Write([]byte("[]"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create inbox: %w", err)
	}
	return nil
}
