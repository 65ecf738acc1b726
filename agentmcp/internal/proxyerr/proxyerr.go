// Package proxyerr holds the proxy's JSON-RPC errors: the codes of the
// requirements' NFR-6 (docs/requirements.md), a sentinel per code, and
// ToWire, which turns any error into the error object a client gets.
//
// Every layer of the proxy (the connection, the session domain, the tools)
// returns these errors; only the connection writes them. Test for a kind
// with errors.Is against the sentinel:
//
//	if errors.Is(err, proxyerr.ErrSessionNotFound) { … }
package proxyerr

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// The proxy's own JSON-RPC error codes (NFR-6).
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
	CodeBudgetExceeded       = -32010 // a token budget is used up: no new turn starts until it is raised
)

// The MCP specification's own codes (2026-07-28, -32020 to -32099), and
// resource not found as the revisions before it had it (the same number
// as SESSION_NOT_FOUND).
const (
	CodeResourceNotFound           = -32002
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// Kind is one kind of error: a JSON-RPC code and the name the client sees
// in data.error_code. The sentinels below are the only values.
type Kind struct {
	code int64
	name string
}

// Error returns the kind's name, such as "SESSION_NOT_FOUND".
func (k *Kind) Error() string { return k.name }

// Code returns the kind's JSON-RPC code.
func (k *Kind) Code() int64 { return k.code }

// The sentinels; test with errors.Is. Each carries its JSON-RPC code.
var (
	ErrIdentityConflict     = &Kind{CodeIdentityConflict, "IDENTITY_CONFLICT"}
	ErrSessionNotFound      = &Kind{CodeSessionNotFound, "SESSION_NOT_FOUND"}
	ErrSessionClosed        = &Kind{CodeSessionClosed, "SESSION_CLOSED"}
	ErrMaxSessionsExceeded  = &Kind{CodeMaxSessionsExceeded, "MAX_SESSIONS_EXCEEDED"}
	ErrChildProcessDead     = &Kind{CodeChildProcessDead, "CHILD_PROCESS_DEAD"}
	ErrRequestTimeout       = &Kind{CodeRequestTimeout, "REQUEST_TIMEOUT"}
	ErrInvalidSessionParams = &Kind{CodeInvalidSessionParams, "INVALID_SESSION_PARAMS"}
	ErrAgentFileNotFound    = &Kind{CodeAgentFileNotFound, "AGENT_FILE_NOT_FOUND"}
	ErrIdentityRequired     = &Kind{CodeIdentityRequired, "IDENTITY_REQUIRED"}
	ErrBudgetExceeded       = &Kind{CodeBudgetExceeded, "BUDGET_EXCEEDED"}
	ErrInvalidParams        = &Kind{jsonrpcframe.CodeInvalidParams, "INVALID_PARAMS"}
	ErrInvalidRequest       = &Kind{jsonrpcframe.CodeInvalidRequest, "INVALID_REQUEST"}
	ErrMethodNotFound       = &Kind{jsonrpcframe.CodeMethodNotFound, "METHOD_NOT_FOUND"}
	ErrInternal             = &Kind{jsonrpcframe.CodeInternalError, "INTERNAL_ERROR"}

	ErrMissingClientCapability    = &Kind{CodeMissingClientCapability, "MISSING_REQUIRED_CLIENT_CAPABILITY"}
	ErrUnsupportedProtocolVersion = &Kind{CodeUnsupportedProtocolVersion, "UNSUPPORTED_PROTOCOL_VERSION"}

	// ErrTaskNotFound is a tasks/get, tasks/update or tasks/cancel for a
	// task this server does not know, or no longer (expired): INVALID_PARAMS,
	// as the tasks extension (SEP-2663) requires.
	ErrTaskNotFound = &Kind{jsonrpcframe.CodeInvalidParams, "TASK_NOT_FOUND"}

	// ErrResourceNotFound is a resources/read of a URI the server does not
	// have: -32002 up to MCP 2025-11-25, INVALID_PARAMS on 2026-07-28
	// (SEP-2164; the connection maps the code by the request's revision).
	ErrResourceNotFound = &Kind{CodeResourceNotFound, "RESOURCE_NOT_FOUND"}
)

// Error is an error of one Kind with its message and data; it wraps the
// Kind, so errors.Is(err, proxyerr.ErrSessionClosed) works through it, and
// the error underneath when there is one (Wrap).
type Error struct {
	Kind *Kind
	Msg  string
	// Data are the members added to the JSON-RPC error's data (besides
	// error_code and error_source). optional.
	Data map[string]any
	// Cause is the error underneath (a dead child's *backend.ExitError,
	// say), found by errors.Is and errors.As through the Error. optional.
	Cause error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the Kind and, when set, the Cause.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// New returns an *Error of kind with a formatted message; data may be nil.
func New(kind *Kind, data map[string]any, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Data: data}
}

// Wrap is New keeping cause underneath (Error.Cause): the client sees the
// message and data, errors.Is and errors.As still find the cause.
func Wrap(kind *Kind, cause error, data map[string]any, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Data: data, Cause: cause}
}

// ChildError is an error response of the Codex child, passed on to the
// client with error_source "child" and the original in data.child_error.
type ChildError struct {
	// Raw is the child's error member, verbatim.
	Raw json.RawMessage
}

func (e *ChildError) Error() string { return "codex child error: " + string(e.Raw) }

// ToWire converts any error into the JSON-RPC error object the client
// gets. A proxy error keeps its code and carries data.error_code and
// data.error_source = "proxy"; a *ChildError keeps the child's code and
// message with data.error_source = "child"; any other error is an internal
// error (-32603) with its text.
func ToWire(err error) *jsonrpcframe.Error {
	var ce *ChildError
	if errors.As(err, &ce) {
		var orig jsonrpcframe.Error
		_ = json.Unmarshal(ce.Raw, &orig)
		if orig.Code == 0 {
			orig.Code = jsonrpcframe.CodeInternalError
		}
		data, _ := json.Marshal(map[string]any{"error_source": "child", "child_error": ce.Raw})
		return &jsonrpcframe.Error{Code: orig.Code, Message: orig.Message, Data: data}
	}
	data := map[string]any{}
	code := int64(jsonrpcframe.CodeInternalError)
	msg := err.Error()
	var pe *Error
	if errors.As(err, &pe) {
		code = pe.Kind.code
		for k, v := range pe.Data {
			data[k] = v
		}
		data["error_code"] = pe.Kind.name
	} else {
		var k *Kind
		if errors.As(err, &k) {
			code = k.code
			data["error_code"] = k.name
		}
	}
	data["error_source"] = "proxy"
	b, _ := json.Marshal(data)
	return &jsonrpcframe.Error{Code: code, Message: msg, Data: b}
}
