//go:build !linux

package codexchild

import (
	"io"
	"os"
)

// pipeIO is the pipe's own os.File I/O outside Linux.
type pipeIO struct{}

func newPipeIO(*os.File) *pipeIO { return &pipeIO{} }

// pipeReader returns f.
func pipeReader(f *os.File) io.Reader { return f }

// TryWrite writes nothing: it cannot tell whether the pipe takes b without
// waiting, so it reports it blocked and leaves the write to the caller.
func (*pipeIO) TryWrite(b []byte) (n int, blocked bool, err error) { return 0, len(b) > 0, nil }
