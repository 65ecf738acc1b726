package codexchild

import (
	"log/slog"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
)

// TestStderrLines: Codex's coloured log lines reach our log as text, at
// Codex's own level.
func TestStderrLines(t *testing.T) {
	for _, tt := range []struct {
		in        string
		want      string
		wantLevel slog.Level
	}{
		{"\x1b[2m2026-11-25T08:00:00.1Z\x1b[0m \x1b[31mERROR\x1b[0m \x1b[2mcodex_core::tools::router\x1b[0m: error=exec_command failed",
			"2026-11-25T08:00:00.1Z ERROR codex_core::tools::router: error=exec_command failed", slog.LevelError},
		{"2026-11-25T08:00:00Z  WARN codex_models_manager::model_info: Unknown model mock-model", "2026-11-25T08:00:00Z  WARN codex_models_manager::model_info: Unknown model mock-model", slog.LevelWarn},
		{"WARN starting", "WARN starting", slog.LevelWarn},
		{"2026-11-25T08:00:00Z DEBUG codex: noise", "2026-11-25T08:00:00Z DEBUG codex: noise", slog.LevelDebug},
		{"warning: `codex mcp-server` is deprecated", "warning: `codex mcp-server` is deprecated", slog.LevelInfo},
		{"a line that mentions ERROR later on", "a line that mentions ERROR later on", slog.LevelInfo},
	} {
		got := childproc.StripANSI(tt.in)
		if got != tt.want || stderrLevel(got) != tt.wantLevel {
			t.Errorf("%q: %q at %v, want %q at %v", tt.in, got, stderrLevel(got), tt.want, tt.wantLevel)
		}
	}
}
