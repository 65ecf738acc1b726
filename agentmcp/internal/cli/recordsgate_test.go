package cli

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestRecordsGate: the signal reader waits for the records only when a
// server asked for the gate, and goes on as soon as they are written.
func TestRecordsGate(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		ask     bool // the server asks for the gate
		written bool // and says its records are written
	}{
		{"no server asked", false, false},
		{"records written", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, gate := withRecordsGate(context.Background())
			if tt.ask {
				done := RecordsWritten(ctx)
				if tt.written {
					done()
					done() // twice is harmless
				}
			}
			start := time.Now()
			gate.wait(log)
			if d := time.Since(start); d >= recordsWait {
				t.Errorf("waited %v, want no wait", d)
			}
		})
	}
	// Without a gate in the context, the function does nothing.
	RecordsWritten(context.Background())()
}
