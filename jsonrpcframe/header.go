package jsonrpcframe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// NewHeaderReader returns a Reader for Content-Length framing: header lines
// ending in "\r\n" or "\n", a blank line, then exactly Content-Length bytes of
// body. The header name is matched case-insensitively and other headers are
// ignored. A header block with a missing or bad length, or a line that is not
// a header, is reported as ErrHeader and the reader skips ahead to the next
// Content-Length header. opts may be nil.
func NewHeaderReader(r io.Reader, opts *Options) Reader {
	return &headerReader{br: newBufio(r), max: opts.max()}
}

type headerReader struct {
	br      *bufio.Reader
	max     int
	resync  bool   // skip lines until a Content-Length header
	pending []byte // a header line found inside a garbage line
	eof     bool
	line    []byte
}

// maxHeaderLine bounds what is kept of one header line; the tail is kept so
// that a header glued to the end of garbage can still be found.
const maxHeaderLine = 8 << 10

var contentLength = []byte("content-length")

func (r *headerReader) Read() (*Message, error) {
	length, inBlock := -1, false
	problem := ""
	for {
		var line []byte
		if r.pending != nil {
			line, r.pending = r.pending, nil
		} else {
			if r.eof {
				if inBlock {
					return nil, io.ErrUnexpectedEOF
				}
				return nil, io.EOF
			}
			var err error
			line, err = r.readLine()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					return nil, err
				}
				r.eof = true
			}
		}
		if r.resync {
			i := indexFold(line, contentLength)
			if i < 0 {
				continue
			}
			line, r.resync = line[i:], false
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			if !inBlock {
				continue // blank lines between messages
			}
			break
		}
		name, value, ok := bytes.Cut(t, []byte(":"))
		if n := bytes.TrimSpace(name); len(n) > len(contentLength) && bytes.EqualFold(n[len(n)-len(contentLength):], contentLength) {
			ok = false // garbage glued to the front of a Content-Length header
		}
		if !ok || !isToken(name) {
			r.resync = true
			if i := indexFold(t, contentLength); i > 0 {
				r.pending, r.resync = append([]byte(nil), t[i:]...), false
			}
			return nil, &MessageError{Err: ErrHeader, Detail: fmt.Sprintf("%q is not a header line", cut(t)), Raw: cut(t)}
		}
		inBlock = true
		if bytes.EqualFold(bytes.TrimSpace(name), contentLength) {
			v := bytes.TrimSpace(value)
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n < 0 {
				problem = fmt.Sprintf("bad Content-Length %q", cut(v))
				continue
			}
			length, problem = int(min(n, int64(1)<<50)), ""
		}
	}
	if problem == "" && length < 0 {
		problem = "no Content-Length header"
	}
	if problem != "" {
		r.resync = true
		return nil, &MessageError{Err: ErrHeader, Detail: problem}
	}
	if length > r.max {
		// Not read: a bogus length (Content-Length: 99999999999999) would
		// make the reader discard everything that follows. The body, if it
		// comes, is skipped as garbage up to the next Content-Length header.
		r.resync = true
		return nil, &MessageError{Err: ErrTooLarge, Size: int64(length),
			Detail: fmt.Sprintf("Content-Length %d exceeds the limit of %d bytes; skipping to the next Content-Length header", length, r.max)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r.br, body); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return parse(body, true)
}

// readLine returns the next line without its line ending, keeping at most
// the last maxHeaderLine bytes of a longer one.
func (r *headerReader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.line = append(r.line, chunk...)
		if len(r.line) > 2*maxHeaderLine {
			r.line = append(r.line[:0], r.line[len(r.line)-maxHeaderLine:]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(r.line, "\r\n"), err
	}
}

func isToken(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// indexFold returns the index of the first case-insensitive occurrence of the
// lower-case ASCII word in b, or -1.
func indexFold(b, word []byte) int {
	for i := 0; i+len(word) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}
