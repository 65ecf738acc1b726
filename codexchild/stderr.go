package codexchild

import (
	"log/slog"
	"strings"
)

// stderrLevel is the level of a line of Codex's stderr in our log
// (childproc.Config.StderrLevel; the supervisor has stripped its terminal
// escapes): Codex's own ("2026-11-25T08:00:00Z ERROR codex_core: …" is an
// error), else info.
func stderrLevel(line string) slog.Level {
	fields := strings.Fields(line)
	for i, f := range fields {
		if i > 1 {
			break // the level is the first field, or the second after a timestamp
		}
		switch f {
		case "ERROR":
			return slog.LevelError
		case "WARN", "WARNING":
			return slog.LevelWarn
		case "INFO":
			return slog.LevelInfo
		case "DEBUG", "TRACE":
			return slog.LevelDebug
		}
	}
	return slog.LevelInfo
}
