package acp

import (
	"encoding/json"
	"testing"
)

// TestModelOf: the model a session's opening answer names: the
// session-models extension's current model first, else the current value
// of the "model" config option (as mockacp and claude-agent-acp send it),
// else none.
func TestModelOf(t *testing.T) {
	tests := []struct {
		name, result, want string
	}{
		{"models", `{"sessionId":"s","models":{"currentModelId":"claude-sonnet-4-5","availableModels":[]},"configOptions":[{"id":"model","currentValue":"x"}]}`, "claude-sonnet-4-5"},
		{"config option", `{"sessionId":"s","configOptions":[{"id":"mode","currentValue":"auto"},{"id":"model","type":"select","currentValue":"mock-small"}]}`, "mock-small"},
		{"a boolean option is no model", `{"sessionId":"s","configOptions":[{"id":"model","currentValue":true}]}`, ""},
		{"neither", `{"sessionId":"s"}`, ""},
	}
	for _, tt := range tests {
		var r sessionResult
		if err := json.Unmarshal([]byte(tt.result), &r); err != nil {
			t.Fatal(err)
		}
		if got := r.modelOf(); got != tt.want {
			t.Errorf("%s: modelOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
