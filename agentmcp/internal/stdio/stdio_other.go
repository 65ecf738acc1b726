//go:build !linux

package stdio

import "io"

// Pollable uses stdin and stdout as they are outside Linux.
func Pollable(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer, func()) {
	return stdin, stdout, func() {}
}

// LogWriter returns w as it is outside Linux.
func LogWriter(w io.Writer) (io.Writer, func()) { return w, func() {} }
