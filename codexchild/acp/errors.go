package acp

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// Errors. Every error a method returns wraps one of these (or a
// *jsonrpcframe.Error the agent sent), so errors.Is tells them apart.
var (
	// ErrAgentExited is wrapped by *ExitError: the agent process is not
	// running. It is backend.ErrChildExited too (one sentinel for
	// every supervised child).
	ErrAgentExited = childproc.ErrExited
	// ErrNotJSONRPC is the Cause of an *ExitError when the client killed
	// the agent because it wrote lines in a row on stdout that are not
	// JSON-RPC (10000; the message says how many). It is
	// backend.ErrNotJSONRPC too.
	ErrNotJSONRPC = childproc.ErrNotJSONRPC
	// ErrStdinBlocked is the Cause of an *ExitError when the client killed
	// the agent because a write to its stdin could not finish in time. It
	// is backend.ErrStdinBlocked too.
	ErrStdinBlocked = childproc.ErrStdinBlocked
	// ErrTimeout is wrapped by *TimeoutError: the agent did not answer a
	// call within its deadline.
	ErrTimeout = errors.New("acp call timed out")
	// ErrHandshake: initialize (or authenticate) failed, timed out or
	// answered a protocol version other than 1; the agent was stopped.
	ErrHandshake = errors.New("acp handshake failed")
	// ErrUnsupported: the agent did not advertise the capability the call
	// needs (session/load, session/resume, session/close, a mode).
	ErrUnsupported = errors.New("not supported by this acp agent")
	// ErrBusy: a turn was started on a session whose previous turn is still
	// running.
	ErrBusy = errors.New("acp session already has a running turn")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("acp client closed")
	// ErrCancelIgnored: after session/cancel the agent did not end the turn
	// within Config.CancelTimeout; its process group was killed.
	ErrCancelIgnored = errors.New("acp agent did not stop after session/cancel")
)

// JSON-RPC errors an ACP agent sends, as sentinels: errors.Is(err,
// ErrAuthRequired) holds for any *jsonrpcframe.Error with that code.
var (
	// ErrAuthRequired is ACP's auth_required (-32000): the agent needs
	// authenticate (or credentials in its environment) first.
	ErrAuthRequired error = &jsonrpcframe.Error{Code: -32000, Message: "authentication required"}
	// ErrResourceNotFound is ACP's resource_not_found (-32002), for example
	// an unknown session id on session/load.
	ErrResourceNotFound error = &jsonrpcframe.Error{Code: -32002, Message: "resource not found"}
	// ErrMethodNotFound is -32601: the agent does not implement the method
	// (Qwen answers session/resume with it although it advertises resume).
	ErrMethodNotFound error = &jsonrpcframe.Error{Code: jsonrpcframe.CodeMethodNotFound, Message: "method not found"}
)

// ExitStatus says how the agent process died. It has the shape of the
// seam's backend.ExitStatus, so the ACP backend converts it with a plain
// conversion (backend.ExitStatus(s)); this package does not import the
// seam.
type ExitStatus struct {
	Code   int    // exit code, -1 when killed by a signal
	Signal string // signal name ("killed", "terminated"), "" when it exited
	// Reason says why the client killed the agent ("it wrote 10412 lines
	// in a row that are not JSON-RPC on stdout, and 10000 is the limit"); ""
	// when it did not.
	Reason string
}

// String says how the agent died, and why when the client killed it.
func (s ExitStatus) String() string { return childproc.ExitStatus(s).String() }

// ExitError reports a call that failed because the agent died, with how it
// died.
type ExitError struct {
	// Child is how the message calls the agent: its kind and "agent"
	// ("claude agent", Config.Name).
	Child  string
	Status ExitStatus
	// Stderr is the last lines the agent wrote to stderr.
	Stderr string
	// Reason says why the client killed the agent, when it did ("" when
	// the agent died by itself). It is Status.Reason.
	Reason string
	// Cause is why the client killed the agent (its text is Reason): it
	// wraps ErrNotJSONRPC, ErrStdinBlocked, ErrCancelIgnored or
	// ErrHandshake; nil when the agent died by itself.
	Cause error
	// During names the call that was waiting when it died ("" for a call
	// made after the death).
	During string
}

// Error says which agent died, why it was killed (first, when it was),
// how and during which call: "claude agent process stopped during
// session/prompt: it wrote 10412 lines in a row that are not JSON-RPC on
// stdout, and 10000 is the limit (killed by signal killed); stderr: …",
// "claude agent process exited with code 3 during session/new".
func (e *ExitError) Error() string {
	var b strings.Builder
	if e.Child == "" {
		b.WriteString("acp agent")
	} else {
		b.WriteString(e.Child)
	}
	b.WriteString(" process ")
	how := ExitStatus{Code: e.Status.Code, Signal: e.Status.Signal}.String()
	during := ""
	if e.During != "" {
		during = " during " + e.During
	}
	if r := cmp.Or(e.Status.Reason, e.Reason); r != "" {
		// ExitStatus's words, with the call between "stopped" and why.
		full := ExitStatus{Code: e.Status.Code, Signal: e.Status.Signal, Reason: r}.String()
		b.WriteString("stopped" + during + strings.TrimPrefix(full, "stopped"))
	} else {
		b.WriteString(how + during)
	}
	if e.Stderr != "" {
		b.WriteString("; stderr: ")
		b.WriteString(e.Stderr)
	}
	return b.String()
}

// Unwrap returns ErrAgentExited, and the Cause when there is one.
func (e *ExitError) Unwrap() []error {
	if e.Cause != nil {
		return []error{ErrAgentExited, e.Cause}
	}
	return []error{ErrAgentExited}
}

// exitError converts the supervisor's *ExitError.
func exitError(pe *childproc.ExitError) *ExitError {
	return &ExitError{Child: pe.Child, Status: ExitStatus(pe.Status), Stderr: pe.Stderr, Reason: pe.Status.Reason, Cause: pe.Cause}
}

// during returns a copy of e naming the call that was waiting.
func (e *ExitError) during(method string) *ExitError {
	c := *e
	c.During = method
	return &c
}

// TimeoutError reports a call the agent did not answer in time.
type TimeoutError struct {
	Method string
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("acp %s: no answer after %v", e.Method, e.After)
}

// Unwrap returns ErrTimeout.
func (e *TimeoutError) Unwrap() error { return ErrTimeout }
