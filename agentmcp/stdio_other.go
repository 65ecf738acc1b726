//go:build !linux

package agentmcp

import "io"

// pollableStdio uses stdin and stdout as they are outside Linux.
func pollableStdio(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer, func()) {
	return stdin, stdout, func() {}
}
