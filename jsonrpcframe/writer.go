package jsonrpcframe

import (
	"io"
	"strconv"
	"sync"
)

// NewLineWriter returns a Writer that writes each message as one line of
// compact JSON followed by "\n", in a single Write call.
func NewLineWriter(w io.Writer) Writer {
	return &writer{w: w, framing: FramingLine}
}

// NewHeaderWriter returns a Writer that writes each message as
// "Content-Length: N\r\n\r\n" followed by the compact JSON body, in a single
// Write call.
func NewHeaderWriter(w io.Writer) Writer {
	return &writer{w: w, framing: FramingHeader}
}

type writer struct {
	mu      sync.Mutex
	w       io.Writer
	framing Framing
	buf     []byte
}

func (w *writer) Write(m *Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked(m, w.framing)
}

const headerReserve = len("Content-Length: \r\n\r\n") + 20

func (w *writer) writeLocked(m *Message, framing Framing) error {
	b := w.buf[:0]
	if framing == FramingHeader {
		b = append(b, make([]byte, headerReserve)...)
	}
	b, err := m.AppendJSON(b)
	if err != nil {
		return err
	}
	out := b
	if framing == FramingHeader {
		body := len(b) - headerReserve
		var hdr [headerReserve]byte
		h := append(hdr[:0], "Content-Length: "...)
		h = strconv.AppendInt(h, int64(body), 10)
		h = append(h, "\r\n\r\n"...)
		out = b[headerReserve-len(h):]
		copy(out, h)
	} else {
		b = append(b, '\n')
		out = b
	}
	if cap(b) <= 1<<20 { // keep a buffer for small messages only
		w.buf = b[:0]
	}
	_, err = w.w.Write(out)
	return err
}
