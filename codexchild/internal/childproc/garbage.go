package childproc

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// What a reader does with lines of a child's stdout that are not JSON-RPC:
// a few are logged per window, the rest counted and reported when the
// window ends, so a child running `yes garbage` cannot fill the disk (it
// wrote about 100 MB of log a second before); a child that writes
// MaxGarbageRun bad lines in a row, with no message between, is broken and
// stopped.
const (
	GarbageLogPerWindow = 5
	GarbageWindow       = 10 * time.Second
	MaxGarbageRun       = 10000
)

// Garbage counts the bad lines of one child's stdout. Only the child's
// reader goroutine uses it.
type Garbage struct {
	log     *slog.Logger
	who     string // "codex child", "claude agent": how the log names the child (Config.Name)
	now     func() time.Time
	window  time.Time // when the current window began
	logged  int       // bad lines logged in the window
	dropped int       // bad lines not logged in the window
	run     int       // bad lines since the last message
}

// NewGarbage returns the counter of a child that the log calls who. now
// is the clock (nil means time.Now).
func NewGarbage(log *slog.Logger, who string, now func() time.Time) *Garbage {
	if now == nil {
		now = time.Now
	}
	return &Garbage{log: log, who: who, now: now}
}

// Bad records a bad line; it reports true when the child is broken.
func (g *Garbage) Bad(me *jsonrpcframe.MessageError) bool {
	now := g.now()
	if now.Sub(g.window) >= GarbageWindow {
		g.Flush()
		g.window = now
	}
	g.run++
	if g.logged < GarbageLogPerWindow {
		g.logged++
		g.log.Warn(g.who+" wrote a bad line on stdout; skipped", "err", me.Detail, "line", string(me.Raw))
	} else {
		g.dropped++
	}
	return g.run >= MaxGarbageRun
}

// Run is how many bad lines came since the last message.
func (g *Garbage) Run() int { return g.run }

// Err is the cause to kill a broken child with (Process.Kill): it says how
// many bad lines came in a row, and wraps ErrNotJSONRPC.
func (g *Garbage) Err() error {
	return Because(fmt.Sprintf("it wrote %d lines in a row that are not JSON-RPC on stdout", g.run), ErrNotJSONRPC)
}

// Good records a message: the run of bad lines is over.
func (g *Garbage) Good() { g.run = 0 }

// Flush reports the bad lines the window did not log.
func (g *Garbage) Flush() {
	if g.dropped > 0 {
		g.log.Warn(g.who+" wrote more bad lines on stdout; not logged", "count", g.dropped, "window", GarbageWindow)
	}
	g.logged, g.dropped = 0, 0
}
