package jsonrpcframe

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700 // invalid JSON was received
	CodeInvalidRequest = -32600 // the JSON is not a valid request object
	CodeMethodNotFound = -32601 // the method does not exist or is not available
	CodeInvalidParams  = -32602 // invalid method parameters
	CodeInternalError  = -32603 // internal JSON-RPC error
)

// Error is a JSON-RPC error object. It implements error so that handlers can
// return it and callers can test for it with errors.As.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the message with its code.
func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Is reports whether target is an *Error with the same code, so that an
// *Error can serve as a sentinel: errors.Is(err, &Error{Code: -32601}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for reading errors. Every error Read returns for one bad message
// is a [*MessageError] that wraps exactly one of these.
var (
	// ErrParse: the bytes are not JSON (answer with -32700 and a null id).
	ErrParse = errors.New("jsonrpcframe: parse error")
	// ErrInvalid: JSON, but not a JSON-RPC message (answer with -32600;
	// MessageError.ID holds the id when one could be read).
	ErrInvalid = errors.New("jsonrpcframe: invalid message")
	// ErrBatch: a JSON array (a batch); MessageError.Elements holds its
	// elements so the caller can answer each, or answer -32600.
	ErrBatch = errors.New("jsonrpcframe: batch")
	// ErrTooLarge: the message is larger than Options.MaxMessageSize; it was
	// skipped.
	ErrTooLarge = errors.New("jsonrpcframe: message too large")
	// ErrHeader: a Content-Length header block that is malformed, has no
	// length or a bad one; the reader resynchronises to the next header.
	ErrHeader = errors.New("jsonrpcframe: bad header")
)

// MessageError reports one bad message. The stream stays usable: the next
// Read returns the next message.
type MessageError struct {
	// Err is one of ErrParse, ErrInvalid, ErrBatch, ErrTooLarge, ErrHeader.
	Err error
	// Detail says what was wrong, for logs.
	Detail string
	// ID is the request id when it could be read from an invalid message.
	ID ID
	// Raw holds the offending bytes, cut to 4 KiB except for a batch, where
	// it is the whole array.
	Raw []byte
	// Elements are the batch's elements (ErrBatch only).
	Elements []json.RawMessage
	// Size is the message size in bytes, when known.
	Size int64
}

// Error describes the bad message.
func (e *MessageError) Error() string {
	if e.Detail == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + ": " + e.Detail
}

// Unwrap returns the sentinel.
func (e *MessageError) Unwrap() error { return e.Err }

// Code returns the JSON-RPC error code a server should answer with:
// -32700 for ErrParse, -32600 otherwise.
func (e *MessageError) Code() int64 {
	if errors.Is(e.Err, ErrParse) {
		return CodeParseError
	}
	return CodeInvalidRequest
}

// Response returns the error response a server should send for the bad
// message: the id when known, otherwise null.
func (e *MessageError) Response() *Message {
	id := e.ID
	if id.IsZero() {
		id = NullID()
	}
	return NewErrorResponse(id, &Error{Code: e.Code(), Message: e.Error()})
}

const maxRawInError = 4 << 10

func cut(b []byte) []byte {
	if len(b) > maxRawInError {
		b = b[:maxRawInError]
	}
	return append([]byte(nil), b...)
}
