package outputschema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const answerSchema = `{"type":"object","properties":{"answer":{"type":"string"},"score":{"type":"integer","minimum":0}},"required":["answer"],"additionalProperties":false}`

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		wantErr      string // "" means it compiles
	}{
		{"object schema", answerSchema, ""},
		{"empty schema accepts anything", `{}`, ""},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":{"type":"number"}}`, ""},
		{"local reference", `{"$defs":{"n":{"type":"number"}},"type":"object","properties":{"x":{"$ref":"#/$defs/n"}}}`, ""},
		{"not an object", `"notaschema"`, "a schema is a JSON object"},
		{"nothing", ``, "a schema is a JSON object"},
		{"bad JSON", `{"type":`, "invalid output schema"},
		{"unknown type", `{"type":"bogus"}`, "/type: bogus is not a JSON type"},
		{"unknown type deep down", `{"type":"object","properties":{"type":{"type":["string","text"]}}}`, "/properties/type/type: text is not a JSON type"},
		{"a const that looks like a schema", `{"const":{"type":"bogus"}}`, ""},
		{"keyword of the wrong type", `{"required":"answer"}`, "invalid output schema"},
		{"reference outside the schema", `{"$ref":"https://example.com/s.json"}`, "invalid output schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tc.schema))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Compile = %v", err)
				}
				if got := string(s.Raw()); got != strings.TrimSpace(tc.schema) {
					t.Errorf("Raw = %s, want %s", got, tc.schema)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Compile = %v, want ErrInvalidSchema saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	s, err := Compile(json.RawMessage(answerSchema))
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		Output   string
		Mismatch bool
		NotJSON  bool
		Says     string
	}
	for _, tc := range []struct {
		name, answer string
		want         outcome
	}{
		{"matching", ` {"answer": "42", "score": 3} `, outcome{Output: `{"answer":"42","score":3}`}},
		{"in a code fence", "```json\n{\"answer\": \"fenced\"}\n```", outcome{Output: `{"answer":"fenced"}`}},
		{"in a bare fence", "```\n{\"answer\": \"x\"}```", outcome{Output: `{"answer":"x"}`}},
		{"missing required", `{"score": 1}`, outcome{Mismatch: true, Says: "answer"}},
		{"extra property", `{"answer": "a", "more": 1}`, outcome{Mismatch: true, Says: "more"}},
		{"wrong type", `{"answer": 42}`, outcome{Mismatch: true, Says: "answer"}},
		{"a float for an integer", `{"answer": "a", "score": 1.5}`, outcome{Mismatch: true, Says: "score"}},
		{"below the minimum", `{"answer": "a", "score": -1}`, outcome{Mismatch: true, Says: "minimum"}},
		{"prose", `The answer is 42.`, outcome{Mismatch: true, NotJSON: true, Says: "invalid character"}},
		{"two values", `{"answer": "a"} {"answer": "b"}`, outcome{Mismatch: true, NotJSON: true, Says: "more than one"}},
		{"empty", ``, outcome{Mismatch: true, NotJSON: true, Says: "EOF"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.Check(tc.answer)
			got := outcome{Output: string(out)}
			var me *MismatchError
			if errors.As(err, &me) {
				got.Mismatch, got.NotJSON = errors.Is(err, ErrMismatch), me.NotJSON
				if strings.Contains(err.Error(), tc.want.Says) {
					got.Says = tc.want.Says
				} else {
					got.Says = err.Error()
				}
			} else if err != nil {
				t.Fatalf("Check = %v, want nil or a *MismatchError", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check(%q) (-want +got):\n%s", tc.answer, diff)
			}
		})
	}
}

// FuzzCheck: Check never panics, and what it returns is JSON that matches.
func FuzzCheck(f *testing.F) {
	s, err := Compile(json.RawMessage(answerSchema))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{"answer":"a"}`, "```json\n{\"answer\":\"b\",\"score\":2}\n```", `[1,2]`, `{"answer":`, "```"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		out, err := s.Check(answer)
		if err != nil {
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("Check = %v, not ErrMismatch", err)
			}
			return
		}
		if _, err := s.Check(string(out)); err != nil {
			t.Fatalf("the output %s of Check does not pass it again: %v", out, err)
		}
	})
}
