package cli

import (
	"os"
	"syscall"
	"testing"
)

// TestSignalAction: Claude Code's stop (SIGINT, then SIGTERM 100 ms later)
// is one shutdown; a repeated signal, or a third, exits at once.
func TestSignalAction(t *testing.T) {
	const (
		in   = syscall.SIGINT
		term = syscall.SIGTERM
	)
	tests := []struct {
		name string
		seen []os.Signal
		sig  os.Signal
		want signalStep
	}{
		{"SIGINT first", nil, in, stepShutdown},
		{"SIGTERM first", nil, term, stepShutdown},
		{"Claude Code's SIGTERM after its SIGINT", []os.Signal{in}, term, stepGoOn},
		{"SIGINT after SIGTERM", []os.Signal{term}, in, stepGoOn},
		{"a second Ctrl-C", []os.Signal{in}, in, stepExit},
		{"a second SIGTERM", []os.Signal{term}, term, stepExit},
		{"a third signal", []os.Signal{in, term}, term, stepExit},
		{"a third, SIGINT", []os.Signal{in, term}, in, stepExit},
	}
	for _, tt := range tests {
		if got := signalAction(tt.seen, tt.sig); got != tt.want {
			t.Errorf("%s: signalAction(%v, %v) = %d, want %d", tt.name, tt.seen, tt.sig, got, tt.want)
		}
	}
}
