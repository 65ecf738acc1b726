package fsx

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Exchange atomically swaps the files at a and b (renameat2 with
// RENAME_EXCHANGE). It returns an error wrapping errors.ErrUnsupported when
// the file system cannot exchange.
func Exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	return renameErr("exchange", a, b, err)
}

// RenameNoReplace renames from to to unless to exists, in which case the
// error wraps os.ErrExist (renameat2 with RENAME_NOREPLACE).
func RenameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	return renameErr("rename", from, to, err)
}

func renameErr(op, a, b string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return &os.LinkError{Op: op, Old: a, New: b, Err: errors.Join(errors.ErrUnsupported, err)}
	default:
		return &os.LinkError{Op: op, Old: a, New: b, Err: err}
	}
}
