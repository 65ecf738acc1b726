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

// A BatchWriter writes several messages with one Write call on the
// underlying stream (fewer system calls and wake-ups for a burst of
// notifications). The writers of this package implement it.
type BatchWriter interface {
	Writer
	WriteBatch(ms []*Message) error
}

func (w *writer) WriteBatch(ms []*Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeBatchLocked(ms, w.framing)
}

// writeBatchLocked encodes every message, framed, into the writer's buffer
// and writes it with one Write.
func (w *writer) writeBatchLocked(ms []*Message, framing Framing) error {
	if len(ms) == 1 {
		return w.writeLocked(ms[0], framing)
	}
	out := w.buf[:0]
	for _, m := range ms {
		var err error
		if out, err = appendFramed(out, m, framing); err != nil {
			return err
		}
	}
	if cap(out) <= 1<<20 { // keep a buffer for small writes only
		w.buf = out[:0]
	}
	_, err := w.w.Write(out)
	return err
}

// writeLocked writes one message; a header goes right before the body
// encoded behind the room for it, so nothing is moved.
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

const headerReserve = len("Content-Length: \r\n\r\n") + 20

// appendFramed appends m's compact JSON to b, framed: followed by "\n", or
// after its Content-Length header. The body is encoded in place behind room
// for the longest header, then moved up against the header.
func appendFramed(b []byte, m *Message, framing Framing) ([]byte, error) {
	if framing != FramingHeader {
		b, err := m.AppendJSON(b)
		return append(b, '\n'), err
	}
	start := len(b)
	b = append(b, make([]byte, headerReserve)...)
	b, err := m.AppendJSON(b)
	if err != nil {
		return b, err
	}
	body := len(b) - start - headerReserve
	var hdr [headerReserve]byte
	h := append(hdr[:0], "Content-Length: "...)
	h = strconv.AppendInt(h, int64(body), 10)
	h = append(h, "\r\n\r\n"...)
	copy(b[start:], h)
	copy(b[start+len(h):], b[start+headerReserve:])
	return b[:start+len(h)+body], nil
}
