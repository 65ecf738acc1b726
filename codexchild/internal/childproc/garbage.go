package childproc

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
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
// reader goroutine changes it; the text of Err may be read by others.
type Garbage struct {
	log     *slog.Logger
	who     string // "codex child", "claude agent": how the log names the child (Config.Name)
	now     func() time.Time
	window  time.Time    // when the current window began
	logged  int          // bad lines logged in the window
	dropped int          // bad lines not logged in the window
	run     atomic.Int64 // bad lines since the last message (read by Err's text)
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
	run := g.run.Add(1)
	if g.logged < GarbageLogPerWindow {
		g.logged++
		g.log.Warn(g.who+" wrote a bad line on stdout; skipped", "err", me.Detail, "line", string(me.Raw))
	} else {
		g.dropped++
	}
	return run >= MaxGarbageRun
}

// Run is how many bad lines came since the last message.
func (g *Garbage) Run() int { return int(g.run.Load()) }

// Err is the cause to kill a broken child with (Process.Kill): it says how
// many bad lines came in a row, and wraps ErrNotJSONRPC. Its text counts
// the lines Drain reads after the kill too, so the supervisor, which reads
// it once stdout is done, reports how many the child wrote, not the limit.
func (g *Garbage) Err() error { return &flood{g: g} }

// Drain reads r to its end after the kill, counting the bad lines: what
// the child wrote after that no longer counts as messages, but the count
// says how big the flood was. It returns at r's first error that is not a
// bad line (EOF once the killed child's pipe is empty, or the closed
// pipe).
func (g *Garbage) Drain(r jsonrpcframe.Reader) {
	for {
		_, err := r.Read()
		var me *jsonrpcframe.MessageError
		if err != nil && !errors.As(err, &me) {
			return
		}
		if me != nil {
			g.run.Add(1)
		}
	}
}

// flood is the cause of a child killed for its garbage (Garbage.Err).
type flood struct{ g *Garbage }

func (f *flood) Error() string {
	return fmt.Sprintf("it wrote %d lines in a row that are not JSON-RPC on stdout, and %d is the limit", f.g.run.Load(), MaxGarbageRun)
}

func (f *flood) Unwrap() error { return ErrNotJSONRPC }

// Good records a message: the run of bad lines is over.
func (g *Garbage) Good() { g.run.Store(0) }

// Flush reports the bad lines the window did not log.
func (g *Garbage) Flush() {
	if g.dropped > 0 {
		g.log.Warn(g.who+" wrote more bad lines on stdout; not logged", "count", g.dropped, "window", GarbageWindow)
	}
	g.logged, g.dropped = 0, 0
}
