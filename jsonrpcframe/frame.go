package jsonrpcframe

import (
	"bufio"
	"io"
)

// DefaultMaxMessageSize is the per-message size limit used when
// Options.MaxMessageSize is zero.
const DefaultMaxMessageSize = 64 << 20

// A Reader reads one message per call. Read returns a *MessageError for one
// bad message (the next Read continues with the next message), io.EOF at a
// clean end of the stream, io.ErrUnexpectedEOF when the stream ends inside a
// message, and any error of the underlying reader as it is. A Reader is not
// safe for concurrent use.
type Reader interface {
	Read() (*Message, error)
}

// A Writer writes one message per call. Writers are safe for concurrent use:
// messages written from many goroutines never interleave.
type Writer interface {
	Write(*Message) error
}

// Framing names a framing.
type Framing int

// The framings.
const (
	// FramingUnknown: not detected yet.
	FramingUnknown Framing = iota
	// FramingLine: one JSON message per line (newline-delimited JSON).
	FramingLine
	// FramingHeader: Content-Length headers, a blank line, then the body.
	FramingHeader
)

func (f Framing) String() string {
	switch f {
	case FramingLine:
		return "ndjson"
	case FramingHeader:
		return "content-length"
	}
	return "unknown"
}

// Options configure readers. The zero value (or nil) is ready to use.
type Options struct {
	// MaxMessageSize is the largest message, in bytes, a reader accepts.
	// optional: 0 means DefaultMaxMessageSize (64 MiB).
	MaxMessageSize int
}

func (o *Options) max() int {
	if o == nil || o.MaxMessageSize <= 0 {
		return DefaultMaxMessageSize
	}
	return o.MaxMessageSize
}

const readBufferSize = 64 << 10

func newBufio(r io.Reader) *bufio.Reader {
	if br, ok := r.(*bufio.Reader); ok && br.Size() >= 4096 {
		return br
	}
	return bufio.NewReaderSize(r, readBufferSize)
}
