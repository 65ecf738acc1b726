package jsonrpcframe

import (
	"bufio"
	"errors"
	"io"
	"sync"
)

// NewAuto returns a Reader that detects the framing from the first
// non-whitespace byte of r ('{' or '[' means newline-delimited JSON, anything
// else Content-Length headers) and a Writer on w that answers in the framing
// the Reader detected. Messages written before the first Read has detected the
// framing are written as newline-delimited JSON. opts may be nil.
func NewAuto(r io.Reader, w io.Writer, opts *Options) (*AutoReader, Writer) {
	s := &autoState{}
	ar := &AutoReader{br: newBufio(r), opts: opts, state: s}
	aw := &autoWriter{writer: writer{w: w, framing: FramingLine}, state: s}
	return ar, aw
}

type autoState struct {
	mu      sync.Mutex
	framing Framing
}

func (s *autoState) get() Framing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.framing
}

// AutoReader is the Reader returned by NewAuto.
type AutoReader struct {
	br    *bufio.Reader
	opts  *Options
	state *autoState
	r     Reader
}

// Read detects the framing on the first call, then reads one message.
func (a *AutoReader) Read() (*Message, error) {
	if a.r == nil {
		f, err := detect(a.br)
		if err != nil {
			return nil, err
		}
		a.state.mu.Lock()
		a.state.framing = f
		a.state.mu.Unlock()
		if f == FramingHeader {
			a.r = NewHeaderReader(a.br, a.opts)
		} else {
			a.r = NewLineReader(a.br, a.opts)
		}
	}
	return a.r.Read()
}

// Framing returns the detected framing, or FramingUnknown before the first
// message has been seen.
func (a *AutoReader) Framing() Framing { return a.state.get() }

func detect(br *bufio.Reader) (Framing, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return FramingUnknown, io.EOF
			}
			return FramingUnknown, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		_ = br.UnreadByte()
		if c == '{' || c == '[' {
			return FramingLine, nil
		}
		return FramingHeader, nil
	}
}

type autoWriter struct {
	writer
	state *autoState
}

func (w *autoWriter) Write(m *Message) error {
	f := w.state.get()
	if f == FramingUnknown {
		f = FramingLine
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked(m, f)
}
