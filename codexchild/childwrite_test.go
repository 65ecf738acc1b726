package codexchild

import (
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// TestChildWriteWaits: a write the pipe cannot take at once waits for the
// reader under stdinWriteTimeout, and that deadline does not outlive it.
func TestChildWriteWaits(t *testing.T) {
	old := stdinWriteTimeout
	stdinWriteTimeout = 300 * time.Millisecond
	t.Cleanup(func() { stdinWriteTimeout = old })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	c := &child{stdin: w, in: jsonrpcframe.NewPipe(w), log: slog.New(slog.DiscardHandler)}
	read := make(chan int)
	go func() {
		time.Sleep(50 * time.Millisecond) // the pipe fills up first
		n, _ := io.Copy(io.Discard, r)
		read <- int(n)
	}()
	big := make([]byte, 2<<20)
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write(2 MiB) = %d, %v", n, err)
	}
	time.Sleep(2 * stdinWriteTimeout)
	if n, err := c.Write([]byte("later\n")); n != 6 || err != nil {
		t.Fatalf("a later Write = %d, %v (the deadline of the blocked write must not stay)", n, err)
	}
	w.Close()
	if got := <-read; got != len(big)+6 {
		t.Errorf("the reader got %d bytes, want %d", got, len(big)+6)
	}
}
