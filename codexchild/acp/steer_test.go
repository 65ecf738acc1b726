package acp

import (
	"encoding/json"
	"testing"
)

// TestSteeringOf: the steering extension is advertised in the initialize
// result's own _meta (claude-agent-acp 0.101.0), and only as supported:
// true counts.
func TestSteeringOf(t *testing.T) {
	tests := []struct {
		meta string
		want bool
	}{
		{`{"steering":{"supported":true}}`, true},
		{`{"claudeCode":{"promptQueueing":true},"steering":{"supported":true}}`, true},
		{`{"steering":{"supported":false}}`, false},
		{`{"steering":{}}`, false},
		{`{}`, false},
		{``, false},
		{`null`, false},
		{`"steering"`, false},
	}
	for _, tt := range tests {
		if got := steeringOf(json.RawMessage(tt.meta)); got != tt.want {
			t.Errorf("steeringOf(%s) = %v, want %v", tt.meta, got, tt.want)
		}
	}
}
