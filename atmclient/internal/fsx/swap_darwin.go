package fsx

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Exchange atomically swaps the files at a and b (renamex_np with
// RENAME_SWAP). It returns an error wrapping errors.ErrUnsupported when the
// file system cannot swap.
func Exchange(a, b string) error {
	return renameErr("exchange", a, b, unix.RenamexNp(a, b, unix.RENAME_SWAP))
}

// RenameNoReplace renames from to to unless to exists, in which case the
// error wraps os.ErrExist (renamex_np with RENAME_EXCL).
func RenameNoReplace(from, to string) error {
	return renameErr("rename", from, to, unix.RenamexNp(from, to, unix.RENAME_EXCL))
}

func renameErr(op, a, b string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTSUP):
		return &os.LinkError{Op: op, Old: a, New: b, Err: errors.Join(errors.ErrUnsupported, err)}
	default:
		return &os.LinkError{Op: op, Old: a, New: b, Err: err}
	}
}
