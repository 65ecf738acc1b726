package mockmodel

import (
	"encoding/json"
	"net/http"
	"testing"
)

func FuzzRequestParsing(f *testing.F) {
	seed, _ := json.Marshal(body(msg("user", "RUN_SHELL"), map[string]any{"type": "function_call_output", "output": []any{1, "x"}}))
	f.Add(seed)
	f.Add([]byte(`{"input":[{"role":"user","content":"plain"}],"tools":[{"type":"namespace","name":"n","tools":[{"name":"t"},7]}]}`))
	f.Add([]byte(`{"input":"not a list","tools":{}}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		hr, _ := http.NewRequest(http.MethodPost, "http://x/v1/responses", nil)
		r := newRequest(1, hr, raw)
		_ = r.InputTexts()
		_, _ = r.ToolOutput()
		if r.Body == nil && (r.LastUserText != "" || r.LastItemType != "" || len(r.ToolNames) != 0) {
			t.Errorf("derived fields from an unparsed body: %+v", r)
		}
	})
}
