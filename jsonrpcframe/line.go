package jsonrpcframe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// NewLineReader returns a Reader for newline-delimited JSON. Lines may end in
// "\n" or "\r\n"; blank lines and white space around a message are ignored;
// the last message may lack its newline. opts may be nil.
func NewLineReader(r io.Reader, opts *Options) Reader {
	return &lineReader{br: newBufio(r), max: opts.max()}
}

type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte // accumulates a line longer than the bufio buffer
}

func (r *lineReader) Read() (*Message, error) {
	for {
		line, err := r.readLine()
		if len(line) > 0 {
			return Parse(line)
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine returns the next line, trimmed (empty for a blank line). A line
// longer than the limit (not counting its line ending) is skipped up to its
// end without being buffered and reported as ErrTooLarge.
func (r *lineReader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	size := 0
	tooLarge := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		size += len(chunk)
		if !tooLarge {
			if size-lineEnding(chunk) > r.max {
				tooLarge = true
				r.buf = r.buf[:0]
			} else if err == nil && len(r.buf) == 0 {
				// The common case: the whole line is in the bufio buffer.
				return bytes.TrimSpace(chunk), nil
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLarge {
				return nil, &MessageError{Err: ErrTooLarge, Size: int64(size),
					Detail: fmt.Sprintf("line of %d bytes exceeds the limit of %d bytes", size, r.max)}
			}
			return bytes.TrimSpace(r.buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLarge {
				return nil, &MessageError{Err: ErrTooLarge, Size: int64(size),
					Detail: fmt.Sprintf("line of %d bytes exceeds the limit of %d bytes", size, r.max)}
			}
			line := bytes.TrimSpace(r.buf)
			if len(line) > 0 {
				return line, nil // the last line had no newline
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// lineEnding returns the length of the "\n" or "\r\n" that ends chunk.
func lineEnding(chunk []byte) int {
	n := len(chunk)
	if n > 0 && chunk[n-1] == '\n' {
		if n > 1 && chunk[n-2] == '\r' {
			return 2
		}
		return 1
	}
	return 0
}
