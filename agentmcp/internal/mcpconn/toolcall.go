package mcpconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// ToolCall is one tools/call request of the client.
type ToolCall struct {
	ID    jsonrpcframe.ID
	RawID json.RawMessage // ID's JSON text, for the events of the call
	Name  string
	Args  Args
	// Progress reports progress on the call; nil when the request carried
	// no progress token (its methods do nothing then).
	Progress *Progress
	// Modern: the request declared a stateless revision (2026-07-28) in
	// its _meta. Its result may then ask for input (ToolResult.Input), and
	// the Conn sends no requests of its own for it.
	Modern bool
	// Elicitation: the client can be asked in a form, as this request
	// declared (modern) or as initialize did (legacy).
	Elicitation bool
	// RequestState and InputResponses are a modern retry's answers to the
	// input an earlier result asked for (params.requestState and
	// params.inputResponses, verbatim); empty on a first call.
	RequestState   string
	InputResponses json.RawMessage
	// Tasks: the request's clientCapabilities list the tasks extension
	// (modern only); its result may then be a task (ToolResult.Task).
	Tasks bool

	conn  *Conn           // nil for a call made otherwise (tests, the tools-only server)
	ctx   context.Context // the request's; ends when the client cancels it
	rd    *reader         // the reading role the call was dispatched on
	entry *inflight       // the request's entry in the Conn's table
	state atomic.Int32    // holding, released or returned
	// answered: TryReplyNow wrote the response.
	answered atomic.Bool
}

// The states of a call's hold on the reading role.
const (
	holding  int32 = iota // CallTool runs on the reading goroutine
	released              // Release handed the role on
	returned              // CallTool returned without releasing
)

// ToolResult is a tool's answer: text content, structuredContent and the
// isError flag (a tool's failure the model should read stays a result);
// or, to a modern request only, a request for input (Input set: the rest
// is not sent).
type ToolResult struct {
	Text       string
	Structured any
	IsError    bool
	Input      *InputRequired
	// Task, to a call that declared the tasks extension only, answers with
	// a CreateTaskResult instead (the rest is not sent; tasks.go).
	Task *Task
}

// InputRequired is a multi round-trip result (MCP 2026-07-28): what the
// client must answer before it calls the tool again with the same
// arguments, the answers in inputResponses under the same keys and State
// as requestState.
type InputRequired struct {
	// State is echoed by the retry as requestState; the server gives it
	// meaning.
	State string
	// Requests are keyed by names the retry answers under; each is a
	// request the client would have got before this revision, such as
	// elicitation/create.
	Requests map[string]InputRequest
}

// InputRequest is one request of an InputRequired.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// ErrAnswered is what a Handler returns for a call answered with
// TryReplyNow: nothing more is written for it.
var ErrAnswered = errors.New("mcpconn: already answered")

// callKey carries the ToolCall in the context given to CallTool.
type callKey struct{}

// CallOf returns the ToolCall whose CallTool ctx is (or derives from), or
// nil.
func CallOf(ctx context.Context) *ToolCall {
	c, _ := ctx.Value(callKey{}).(*ToolCall)
	return c
}

// Release is (*ToolCall).Release for the call ctx carries; for any other
// ctx it does nothing. It is named after jsonrpc2.Async in the Go MCP SDK.
func Release(ctx context.Context) {
	if c := CallOf(ctx); c != nil {
		c.Release()
	}
}

// Release gives the role of reading the client to another goroutine if
// this call still holds it, so that the client's next messages are read
// while the call goes on. A handler calls it before anything that may wait.
// It does nothing when the call does not hold the role (released already,
// CallTool returned, a call not read by a Conn); it is safe from any
// goroutine.
func (c *ToolCall) Release() {
	if c.rd != nil && c.state.CompareAndSwap(holding, released) {
		c.rd.handOff()
	}
}

// TryReplyNow answers the call at once, on the calling goroutine, when that
// costs no waiting: the client has not cancelled the request and is still
// there, no event is queued or being written, no other answer is being
// written (omu is free), and the client's pipe has room for the answer now
// (without a pipe gauge it never has). It then
// claims the pipe, calls commit (optional; it must not block: the caller
// records there what the answer reports, so the answer never reaches the
// client before that state), ends Progress, writes the answer (held events
// first, in the same write) and reports true; the Handler's CallTool must
// then return ErrAnswered. Otherwise it does nothing and reports false.
//
// Lock order: commit runs with the outbox's omu held (the claim on the
// pipe), not emu: the locks it takes come after omu, and the caller must
// never take omu (write a response, send progress, TryReplyNow again)
// while it holds one of them. Then the Conn's mu is taken, under omu, to
// free the request's id.
func (c *ToolCall) TryReplyNow(r *ToolResult, commit func()) bool {
	if c.conn == nil || c.ctx.Err() != nil || c.answered.Load() {
		return false
	}
	m, err := jsonrpcframe.NewResponse(c.ID, r.JSON())
	if err != nil || !c.conn.out.reserve(len(m.Result)+len(m.ID.Raw())+64) {
		return false
	}
	if commit != nil {
		commit()
	}
	c.Progress.finish()
	c.conn.forget(c.ID, c.entry)
	c.answered.Store(true)
	if c.Modern {
		m.Result = c.resultJSON(r)
	}
	c.conn.out.writeReserved(m)
	return true
}

// resultJSON renders r as the result of this call, in its revision.
func (c *ToolCall) resultJSON(r *ToolResult) json.RawMessage {
	if !c.Modern {
		return r.JSON()
	}
	if r.Task != nil {
		return c.conn.taskJSON(r.Task, "task")
	}
	if r.Input != nil {
		b := []byte(`{"resultType":"input_required","requestState":`)
		b = jsonrpcframe.AppendString(b, r.Input.State)
		b = append(b, `,"inputRequests":`...)
		b = appendEncoded(b, r.Input.Requests)
		tail := c.conn.modernTail("input_required")
		// the tail's own resultType is replaced by the one above
		_, meta, _ := bytes.Cut(tail, []byte(`,"_meta"`))
		b = append(b, `,"_meta"`...)
		b = append(b, meta...)
		return append(b, '}')
	}
	return c.conn.modernResult(r.JSON())
}

// parseToolCall reads a tools/call request (p: its params' members, meta:
// what its _meta declares) without decoding its params (a reader's message
// is valid JSON).
func (cn *Conn) parseToolCall(m *jsonrpcframe.Message, p []jsonrpcframe.Member, meta reqMeta) (*ToolCall, error) {
	name, _ := jsonrpcframe.String(jsonrpcframe.Lookup(p, "name"))
	if name == "" {
		return nil, proxyerr.New(proxyerr.ErrInvalidParams, nil, "tools/call needs params {name, arguments}")
	}
	a, err := ParseArgs(jsonrpcframe.Lookup(p, "arguments"))
	if err != nil {
		return nil, err
	}
	c := &ToolCall{ID: m.ID, RawID: m.ID.Raw(), Name: name, Args: a, conn: cn, Modern: meta.modern}
	if meta.modern {
		c.Elicitation, c.Tasks = meta.elicitation, meta.tasks
		if raw := jsonrpcframe.Lookup(p, "requestState"); len(raw) > 0 && string(raw) != "null" {
			st, ok := jsonrpcframe.String(raw)
			if !ok {
				return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "requestState"}, "requestState must be a string")
			}
			c.RequestState = st
		}
		if raw := jsonrpcframe.Lookup(p, "inputResponses"); len(raw) > 0 && string(raw) != "null" {
			if raw[0] != '{' {
				return nil, proxyerr.New(proxyerr.ErrInvalidParams, map[string]any{"argument": "inputResponses"}, "inputResponses must be an object")
			}
			c.InputResponses = raw
		}
	} else {
		c.Elicitation = cn.Elicitation()
	}
	if meta := jsonrpcframe.Lookup(p, "_meta"); len(meta) > 0 {
		var mbuf [4]jsonrpcframe.Member
		mm, _ := jsonrpcframe.AppendMembers(mbuf[:0], meta)
		if tok := jsonrpcframe.Lookup(mm, "progressToken"); len(tok) > 0 && string(tok) != "null" {
			c.Progress = &Progress{c: cn.out, token: tok}
		}
	}
	return c, nil
}

// JSON renders the result as a tools/call result: text content, the isError flag,
// structuredContent; {"content":[{"type":"text","text":…}],"isError":true,
// "structuredContent":{…}}, the bytes encoding/json would write for the
// same map (without HTML escapes, as jsonrpcframe writes). Every turn's
// answer goes through here, so a flat structuredContent (strings, numbers,
// booleans) is written by hand; anything else is encoded by encoding/json.
func (r *ToolResult) JSON() json.RawMessage {
	b := make([]byte, 0, 2*len(r.Text)+256)
	b = append(b, `{"content":[{"text":`...)
	b = jsonrpcframe.AppendString(b, r.Text)
	b = append(b, `,"type":"text"}]`...)
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	if r.Structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = appendValue(b, r.Structured)
	}
	return append(b, '}')
}

// appendValue appends v as JSON: a map of scalars by hand, with its keys
// sorted as encoding/json sorts them; anything else through encoding/json.
func appendValue(b []byte, v any) []byte {
	if m, ok := v.(map[string]any); ok && len(m) <= 16 {
		var keyBuf [16]string
		keys := keyBuf[:0]
		for k, x := range m {
			switch x.(type) {
			case string, bool, int, int64, nil:
			default:
				return appendEncoded(b, v)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonrpcframe.AppendString(b, k)
			b = append(b, ':')
			switch x := m[k].(type) {
			case string:
				b = jsonrpcframe.AppendString(b, x)
			case bool:
				b = strconv.AppendBool(b, x)
			case int:
				b = strconv.AppendInt(b, int64(x), 10)
			case int64:
				b = strconv.AppendInt(b, x, 10)
			case nil:
				b = append(b, "null"...)
			}
		}
		return append(b, '}')
	}
	return appendEncoded(b, v)
}

// appendEncoded appends v encoded by encoding/json, without HTML escapes;
// a value it cannot encode becomes null (tool results are built from
// plain data: it does not happen).
func appendEncoded(b []byte, v any) []byte {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return append(b, "null"...)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// JSONText renders v as indented JSON for a text content block ("{}" when
// it cannot be encoded).
func JSONText(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "{}"
	}
	return string(b)
}
