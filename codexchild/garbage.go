package codexchild

import (
	"log/slog"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// What the reader does with lines of the child's stdout that are not
// JSON-RPC: a few are logged per window, the rest counted and reported
// when the window ends, so a child running `yes garbage` cannot fill the
// disk (it wrote about 100 MB of log a second before); a child that writes
// maxGarbageRun bad lines in a row, with no message between, is broken and
// stopped.
const (
	garbageLogPerWindow = 5
	garbageWindow       = 10 * time.Second
	maxGarbageRun       = 10000
)

// garbage counts the bad lines of one child's stdout.
type garbage struct {
	log     *slog.Logger
	now     func() time.Time
	window  time.Time // when the current window began
	logged  int       // bad lines logged in the window
	dropped int       // bad lines not logged in the window
	run     int       // bad lines since the last message
}

// bad records a bad line; it reports true when the child is broken.
func (g *garbage) bad(me *jsonrpcframe.MessageError) bool {
	now := g.now()
	if now.Sub(g.window) >= garbageWindow {
		g.flush()
		g.window = now
	}
	g.run++
	if g.logged < garbageLogPerWindow {
		g.logged++
		g.log.Warn("codex child wrote a bad line on stdout; skipped", "err", me.Detail, "line", string(me.Raw))
	} else {
		g.dropped++
	}
	return g.run >= maxGarbageRun
}

// good records a message: the run of bad lines is over.
func (g *garbage) good() { g.run = 0 }

// flush reports the bad lines the window did not log.
func (g *garbage) flush() {
	if g.dropped > 0 {
		g.log.Warn("codex child wrote more bad lines on stdout; not logged", "count", g.dropped, "window", garbageWindow)
	}
	g.logged, g.dropped = 0, 0
}
