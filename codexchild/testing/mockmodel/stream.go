package mockmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrStreamStarted is returned by [Stream.HTTPError] once an event was sent.
var ErrStreamStarted = errors.New("mockmodel: stream already started")

// Stream writes the answer to one POST /v1/responses: either a plain HTTP
// error or a stream of server-sent events. It is used by one goroutine.
type Stream struct {
	ctx       context.Context
	w         http.ResponseWriter
	rc        *http.ResponseController
	n         int
	keepAlive time.Duration
	started   bool
}

// Context is done when the client disconnected or the server is closing.
func (s *Stream) Context() context.Context { return s.ctx }

// N is the request's sequence number; the default ids derive from it.
func (s *Stream) N() int { return s.n }

// ResponseID is the id the built-in answers give this response: "resp_mock_N".
func (s *Stream) ResponseID() string { return fmt.Sprintf("resp_mock_%d", s.n) }

// HTTPError answers with a JSON error body and the status code instead of a
// stream. It fails with [ErrStreamStarted] once an event was sent.
func (s *Stream) HTTPError(code int, message string) error {
	if s.started {
		return ErrStreamStarted
	}
	s.started = true
	body := marshal(map[string]any{"error": map[string]any{"message": message, "type": "server_error"}})
	s.w.Header().Set("Content-Type", "application/json")
	s.w.WriteHeader(code)
	_, err := s.w.Write(body)
	return err
}

func (s *Stream) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "close")
	s.w.WriteHeader(http.StatusOK)
}

// Event sends one event: "event: <type>" and the JSON of ev as data. ev must
// have a string "type". It returns the context's error once the client is
// gone or the server closes.
func (s *Stream) Event(ev map[string]any) error {
	typ, ok := ev["type"].(string)
	if !ok || typ == "" {
		return errors.New("mockmodel: event without a type")
	}
	data, err := marshalErr(ev)
	if err != nil {
		return fmt.Errorf("mockmodel: encode %s event: %w", typ, err)
	}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	s.start()
	return s.write("event: " + typ + "\ndata: " + string(data) + "\n\n")
}

// Comment sends an SSE comment line (": text"), which clients ignore; it is
// used as a keep-alive.
func (s *Stream) Comment(text string) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	s.start()
	return s.write(": " + text + "\n\n")
}

func (s *Stream) write(str string) error {
	if _, err := s.w.Write([]byte(str)); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Wait waits for d while sending a keep-alive comment every keep-alive
// interval. It returns early with the context's error when the client
// disconnects or the server closes.
func (s *Stream) Wait(d time.Duration) error {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(s.keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-deadline.C:
			return nil
		case <-tick.C:
			if err := s.Comment("keepalive"); err != nil {
				return err
			}
		}
	}
}

// Created sends response.created.
func (s *Stream) Created() error {
	return s.Event(map[string]any{"type": "response.created",
		"response": map[string]any{"id": s.ResponseID(), "status": "in_progress"}})
}

// Completed sends response.completed with a fixed usage.
func (s *Stream) Completed() error {
	return s.Event(map[string]any{"type": "response.completed",
		"response": map[string]any{"id": s.ResponseID(), "status": "completed", "usage": usage()}})
}

// Failed sends response.failed with the error message.
func (s *Stream) Failed(message string) error {
	return s.Event(map[string]any{"type": "response.failed",
		"response": map[string]any{"id": s.ResponseID(), "status": "failed",
			"error": map[string]any{"code": "server_error", "message": message}}})
}

// Message streams one assistant message: output_item.added,
// content_part.added, two output_text.delta, output_text.done and
// output_item.done. Its item id is "msg_mock_N".
func (s *Stream) Message(text string) error {
	id := fmt.Sprintf("msg_mock_%d", s.n)
	half := []rune(text)
	first, second := string(half[:len(half)/2]), string(half[len(half)/2:])
	evs := []map[string]any{
		{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}},
		{"type": "response.content_part.added", "item_id": id, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}},
		{"type": "response.output_text.delta", "item_id": id, "output_index": 0, "content_index": 0, "delta": first},
		{"type": "response.output_text.delta", "item_id": id, "output_index": 0, "content_index": 0, "delta": second},
		{"type": "response.output_text.done", "item_id": id, "output_index": 0, "content_index": 0, "text": text},
		{"type": "response.output_item.done", "output_index": 0,
			"item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
	}
	for _, ev := range evs {
		if err := s.Event(ev); err != nil {
			return err
		}
	}
	return nil
}

// FunctionCall is a tool call the model makes.
type FunctionCall struct {
	// Name is the function's name, such as "exec_command" or "atm_send".
	Name string
	// Namespace is the tool's namespace ("mcp__<server>" for the tools of an
	// MCP server); "" means none.
	Namespace string
	// Arguments is the JSON text of the arguments; "" means "{}".
	Arguments string
	// CallID is optional: "" means "call_mock_N".
	CallID string
}

// FunctionCall streams a function call: output_item.added,
// function_call_arguments.delta and .done, and output_item.done. Its item id
// is "fc_mock_N".
func (s *Stream) FunctionCall(fc FunctionCall) error {
	id := fmt.Sprintf("fc_mock_%d", s.n)
	if fc.CallID == "" {
		fc.CallID = fmt.Sprintf("call_mock_%d", s.n)
	}
	if fc.Arguments == "" {
		fc.Arguments = "{}"
	}
	item := func(args, status string) map[string]any {
		m := map[string]any{"type": "function_call", "id": id, "call_id": fc.CallID, "name": fc.Name,
			"arguments": args, "status": status}
		if fc.Namespace != "" {
			m["namespace"] = fc.Namespace
		}
		return m
	}
	evs := []map[string]any{
		{"type": "response.output_item.added", "output_index": 0, "item": item("", "in_progress")},
		{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": 0, "delta": fc.Arguments},
		{"type": "response.function_call_arguments.done", "item_id": id, "output_index": 0, "arguments": fc.Arguments},
		{"type": "response.output_item.done", "output_index": 0, "item": item(fc.Arguments, "completed")},
	}
	for _, ev := range evs {
		if err := s.Event(ev); err != nil {
			return err
		}
	}
	return nil
}

func usage() map[string]any {
	return map[string]any{
		"input_tokens":          120,
		"input_tokens_details":  map[string]any{"cached_tokens": 0},
		"output_tokens":         12,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          132,
	}
}

// marshalErr encodes v as compact JSON without HTML escaping (so "<<" stays
// readable in apply_patch heredocs).
func marshalErr(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// marshal is marshalErr for values that always encode.
func marshal(v any) []byte {
	b, err := marshalErr(v)
	if err != nil {
		panic("mockmodel: " + err.Error())
	}
	return b
}
