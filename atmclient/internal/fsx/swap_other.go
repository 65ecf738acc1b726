//go:build !linux && !darwin

package fsx

import (
	"errors"
	"os"
)

// Exchange is not supported on this platform; callers fall back to a rename.
func Exchange(a, b string) error {
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: errors.ErrUnsupported}
}

// RenameNoReplace is not supported on this platform; callers fall back to a
// rename.
func RenameNoReplace(from, to string) error {
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.ErrUnsupported}
}
