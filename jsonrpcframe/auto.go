package jsonrpcframe

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// NewAuto returns a Reader that detects the framing from the start of r:
// a first non-whitespace byte '{' or '[' means newline-delimited JSON, a
// first line that looks like a header ("Content-Length: 42") means
// Content-Length framing, and anything else is read as newline-delimited
// JSON (its first line then being a parse error) and a Writer on w that answers in the framing
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
		if c == '{' || c == '[' || !firstLineIsHeader(br) {
			return FramingLine, nil
		}
		return FramingHeader, nil
	}
}

// firstLineIsHeader peeks at the first line (without consuming it) and
// reports whether it looks like a header ("Name: value"). A client whose
// first line is garbage is then read as NDJSON, where that line is one parse
// error, rather than as a header stream that never recovers.
func firstLineIsHeader(br *bufio.Reader) bool {
	check := func(line []byte) bool {
		name, _, ok := bytes.Cut(bytes.TrimRight(line, "\r"), []byte(":"))
		return ok && isToken(name)
	}
	for {
		b, _ := br.Peek(br.Buffered())
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return check(b[:i])
		}
		if len(b) >= br.Size() {
			return check(b)
		}
		// Wait for one more byte than is buffered (or the end of input).
		if _, err := br.Peek(len(b) + 1); err != nil {
			b, _ = br.Peek(br.Buffered())
			return check(b)
		}
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

func (w *autoWriter) WriteBatch(ms []*Message) error {
	f := w.state.get()
	if f == FramingUnknown {
		f = FramingLine
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeBatchLocked(ms, f)
}
