package jsonrpcframe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// ObjectStream carries JSON-RPC messages as Go values over a framed byte
// stream, in either MCP framing: it has the methods of
// github.com/sourcegraph/jsonrpc2's ObjectStream (WriteObject, ReadObject,
// Close), so another Go program can run a jsonrpc2.Conn over
// newline-delimited JSON or Content-Length framing (see the example). A
// message the reader cannot use (not JSON, not JSON-RPC, too large) is
// answered with the JSON-RPC error that says why (MessageError.Response),
// skipped and counted, not returned as an error: jsonrpc2 would end the
// connection on any read error, and could not answer it.
type ObjectStream struct {
	r       Reader
	w       Writer
	c       io.Closer
	skipped atomic.Int64
}

// NewObjectStream reads r and writes w in framing; FramingUnknown detects
// the framing from the first message read (as NewAuto) and writes in it.
// Close closes c (optional: nil closes nothing). opts may be nil.
func NewObjectStream(r io.Reader, w io.Writer, c io.Closer, framing Framing, opts *Options) *ObjectStream {
	s := &ObjectStream{c: c}
	switch framing {
	case FramingLine:
		s.r, s.w = NewLineReader(r, opts), NewLineWriter(w)
	case FramingHeader:
		s.r, s.w = NewHeaderReader(r, opts), NewHeaderWriter(w)
	default:
		s.r, s.w = NewAuto(r, w, opts)
	}
	return s
}

// WriteObject writes obj, a JSON-RPC message (such as a *jsonrpc2.Request
// or *jsonrpc2.Response), as one framed message.
func (s *ObjectStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("jsonrpcframe: encode message: %w", err)
	}
	m, err := Parse(b)
	if err != nil {
		return fmt.Errorf("jsonrpcframe: not a JSON-RPC message: %w", err)
	}
	return s.w.Write(m)
}

// ReadObject reads the next message into v (json.Unmarshal). It returns
// io.EOF at the end of the stream.
func (s *ObjectStream) ReadObject(v any) error {
	for {
		m, err := s.r.Read()
		var bad *MessageError
		if errors.As(err, &bad) {
			s.skipped.Add(1)
			_ = s.w.Write(bad.Response()) // best effort; the peer may be gone
			continue
		}
		if err != nil {
			return err
		}
		b, err := m.MarshalJSON()
		if err != nil {
			return err
		}
		return json.Unmarshal(b, v)
	}
}

// Skipped returns how many unusable messages ReadObject has skipped.
func (s *ObjectStream) Skipped() int64 { return s.skipped.Load() }

// Close closes the underlying closer, if any.
func (s *ObjectStream) Close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}
