package agentmcp

import "testing"

// TestServeProcs: serve runs on one processor unless GOMAXPROCS is set.
func TestServeProcs(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want int
	}{
		{nil, 1},
		{map[string]string{"GOMAXPROCS": "4"}, 0},
		{map[string]string{"GOMAXPROCS": "1"}, 0},
		{map[string]string{"GOGC": "200"}, 1},
	}
	for _, tt := range tests {
		if got := serveProcs(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("env %v: %d processors, want %d", tt.env, got, tt.want)
		}
	}
}
