package agentmcp

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/leakcheck"
)

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

// TestToolsServerJoinsItsWatch: the per-thread tools-only server ends with
// its stdin, and its watch on the parent process ends with it.
func TestToolsServerJoinsItsWatch(t *testing.T) {
	leakcheck.Check(t, "agentmcp.")
	cfg := &config.Config{Home: t.TempDir(), Team: "dev", Identity: "arch"}
	var out strings.Builder
	if err := toolsServer(context.Background(), cfg, strings.NewReader(""), &out, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("toolsServer at the end of its stdin: %v", err)
	}
}
