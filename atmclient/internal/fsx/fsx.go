// Package fsx holds the file-system primitives of the ATM inbox protocol:
// the two lock disciplines of the other writers, an flock on a sidecar lock
// file (the atm CLI's, Lock) and a lock directory made with mkdir (Claude
// Code's, LockDir), each with a bounded retry; an atomic exchange of two
// paths, a rename that refuses to replace, and a fresh fsynced file.
package fsx

import (
	"errors"
	"fmt"
	"os"
)

// ErrLockTimeout is returned by Lock and LockDir when the lock stays busy
// for the whole timeout.
var ErrLockTimeout = errors.New("lock busy")

// WriteNew writes data to a new file at path with mode 0600 and fsyncs it.
// An existing file at path is removed first, so the data always goes to a
// fresh inode that no other process has open.
func WriteNew(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// SyncDir fsyncs the directory dir, making a rename in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
