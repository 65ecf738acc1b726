package proxy

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// The proxy's JSON-RPC error codes (seed 000 NFR-6).
const (
	CodeIdentityConflict     = -32001
	CodeSessionNotFound      = -32002
	CodeSessionClosed        = -32003
	CodeMaxSessionsExceeded  = -32004
	CodeChildProcessDead     = -32005
	CodeRequestTimeout       = -32006
	CodeInvalidSessionParams = -32007
	CodeAgentFileNotFound    = -32008
	CodeIdentityRequired     = -32009
)

// Sentinels for the proxy's errors; test with errors.Is. Each carries its
// JSON-RPC code.
var (
	ErrIdentityConflict     = &codeError{CodeIdentityConflict, "IDENTITY_CONFLICT"}
	ErrSessionNotFound      = &codeError{CodeSessionNotFound, "SESSION_NOT_FOUND"}
	ErrSessionClosed        = &codeError{CodeSessionClosed, "SESSION_CLOSED"}
	ErrMaxSessionsExceeded  = &codeError{CodeMaxSessionsExceeded, "MAX_SESSIONS_EXCEEDED"}
	ErrChildProcessDead     = &codeError{CodeChildProcessDead, "CHILD_PROCESS_DEAD"}
	ErrRequestTimeout       = &codeError{CodeRequestTimeout, "REQUEST_TIMEOUT"}
	ErrInvalidSessionParams = &codeError{CodeInvalidSessionParams, "INVALID_SESSION_PARAMS"}
	ErrAgentFileNotFound    = &codeError{CodeAgentFileNotFound, "AGENT_FILE_NOT_FOUND"}
	ErrIdentityRequired     = &codeError{CodeIdentityRequired, "IDENTITY_REQUIRED"}
	ErrInvalidParams        = &codeError{jsonrpcframe.CodeInvalidParams, "INVALID_PARAMS"}
	ErrMethodNotFound       = &codeError{jsonrpcframe.CodeMethodNotFound, "METHOD_NOT_FOUND"}
	ErrInternal             = &codeError{jsonrpcframe.CodeInternalError, "INTERNAL_ERROR"}
)

type codeError struct {
	code int64
	name string
}

func (e *codeError) Error() string { return e.name }

// rpcError is a proxy error with its message and data; it wraps one of the
// sentinels.
type rpcError struct {
	kind *codeError
	msg  string
	data map[string]any
}

func (e *rpcError) Error() string { return e.msg }
func (e *rpcError) Unwrap() error { return e.kind }

// newError returns a proxy error of the given kind; data may be nil.
func newError(kind *codeError, data map[string]any, format string, args ...any) error {
	return &rpcError{kind: kind, msg: fmt.Sprintf(format, args...), data: data}
}

// childError is an error response from the Codex child, forwarded with
// error_source "child" and the original in child_error.
type childError struct {
	raw json.RawMessage
}

func (e *childError) Error() string { return "codex child error: " + string(e.raw) }

// toRPCError converts any error into the JSON-RPC error object the client
// gets: proxy errors keep their code and carry data.error_source = "proxy";
// child errors keep the child's code and message.
func toRPCError(err error) *jsonrpcframe.Error {
	var ce *childError
	if errors.As(err, &ce) {
		var orig jsonrpcframe.Error
		_ = json.Unmarshal(ce.raw, &orig)
		if orig.Code == 0 {
			orig.Code = jsonrpcframe.CodeInternalError
		}
		data, _ := json.Marshal(map[string]any{"error_source": "child", "child_error": ce.raw})
		return &jsonrpcframe.Error{Code: orig.Code, Message: orig.Message, Data: data}
	}
	data := map[string]any{}
	code := int64(jsonrpcframe.CodeInternalError)
	msg := err.Error()
	var re *rpcError
	if errors.As(err, &re) {
		code = re.kind.code
		for k, v := range re.data {
			data[k] = v
		}
		data["error_code"] = re.kind.name
	} else {
		var k *codeError
		if errors.As(err, &k) {
			code = k.code
			data["error_code"] = k.name
		}
	}
	data["error_source"] = "proxy"
	b, _ := json.Marshal(data)
	return &jsonrpcframe.Error{Code: code, Message: msg, Data: b}
}
