package outputschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Errors.
var (
	// ErrInvalidSchema: the schema is not a JSON Schema answers can be
	// checked against (not an object, a wrong keyword value, a reference
	// outside the schema).
	ErrInvalidSchema = errors.New("invalid output schema")
	// ErrMismatch: the answer is not JSON, or JSON that does not match the
	// schema.
	ErrMismatch = errors.New("answer does not match the output schema")
)

// Schema is a compiled output schema. It is safe for concurrent use.
type Schema struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
}

// Compile reads a JSON Schema. A schema that is not a JSON object, has a
// keyword of the wrong type or refers outside itself is an error wrapping
// ErrInvalidSchema that says why.
func Compile(raw json.RawMessage) (*Schema, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: a schema is a JSON object, not %.40s", ErrInvalidSchema, trimmed)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(trimmed, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	if err := checkTypes(s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return &Schema{raw: append(json.RawMessage(nil), trimmed...), resolved: rs}, nil
}

// Raw returns the schema as given (trimmed), for passing it to an agent.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// MismatchError says how an answer failed its schema. It wraps
// ErrMismatch.
type MismatchError struct {
	// NotJSON is set when the answer is not JSON at all.
	NotJSON bool
	// Reason is the parser's or the validator's message.
	Reason string
}

func (e *MismatchError) Error() string {
	if e.NotJSON {
		return "the answer is not JSON: " + e.Reason
	}
	return "the answer does not match the output schema: " + e.Reason
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// Check reads answer as one JSON value, also when it is the only content
// of a Markdown code fence (```json … ```), validates it and returns it
// compacted. A failure is a *MismatchError.
func (s *Schema) Check(answer string) (json.RawMessage, error) {
	text := unfence(strings.TrimSpace(answer))
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &MismatchError{NotJSON: true, Reason: err.Error()}
	}
	if dec.More() {
		return nil, &MismatchError{NotJSON: true, Reason: "more than one JSON value"}
	}
	if err := s.resolved.Validate(numbers(v)); err != nil {
		return nil, &MismatchError{Reason: err.Error()}
	}
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(text)); err != nil {
		return nil, &MismatchError{NotJSON: true, Reason: err.Error()}
	}
	return out.Bytes(), nil
}

// unfence returns the content of a text that is one Markdown code fence,
// else the text.
func unfence(text string) string {
	if !strings.HasPrefix(text, "```") || !strings.HasSuffix(text, "```") || len(text) < 6 {
		return text
	}
	body := text[3 : len(text)-3]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
		body = body[nl+1:] // the info string: json
	}
	return strings.TrimSpace(body)
}

// numbers turns the json.Numbers of a decoded value into the int64 or
// float64 the validator expects (an integer stays an integer).
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// jsonTypes are the values of the keyword "type".
var jsonTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// checkTypes refuses a "type" that names no JSON type anywhere in the
// schema (the validator would take it and match nothing: {"type":"bogus"}
// is a schema no answer can meet, which Codex passes to the model as it
// is).
func checkTypes(s jsonschema.Schema) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	return walkTypes(doc, "")
}

func walkTypes(v any, at string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "const", "enum", "default", "examples":
				continue // values, not schemas
			case "type":
				if _, ok := e.(map[string]any); ok {
					break // a property named "type": a schema, walked below
				}
				names, _ := e.([]any)
				if s, ok := e.(string); ok {
					names = []any{s}
				}
				for _, n := range names {
					if s, _ := n.(string); !jsonTypes[s] {
						return fmt.Errorf("%s/type: %v is not a JSON type", at, n)
					}
				}
				continue
			}
			if err := walkTypes(e, at+"/"+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := walkTypes(e, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
