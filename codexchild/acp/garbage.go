package acp

import (
	"log/slog"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// What the reader does with lines of the agent's stdout that are not
// JSON-RPC (the ACP transport forbids them, but an agent's dependency may
// print): a few are logged per window, the rest counted and reported when
// the window ends, so an agent printing in a loop cannot fill the disk; an
// agent that writes maxGarbageRun bad lines in a row, with no message
// between, is broken and killed.
const (
	garbageLogPerWindow = 5
	garbageWindow       = 10 * time.Second
	maxGarbageRun       = 10000
)

// garbage counts the bad lines of one agent's stdout. Only the reader
// goroutine uses it.
type garbage struct {
	log     *slog.Logger
	now     func() time.Time
	window  time.Time // when the current window began
	logged  int       // bad lines logged in the window
	dropped int       // bad lines not logged in the window
	run     int       // bad lines since the last message
}

// bad records a bad line; it reports true when the agent is broken.
func (g *garbage) bad(me *jsonrpcframe.MessageError) bool {
	now := g.now()
	if now.Sub(g.window) >= garbageWindow {
		g.flush()
		g.window = now
	}
	g.run++
	if g.logged < garbageLogPerWindow {
		g.logged++
		g.log.Warn("acp agent wrote a bad line on stdout; skipped", "err", me.Detail, "line", string(me.Raw))
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
		g.log.Warn("acp agent wrote more bad lines on stdout; not logged", "count", g.dropped, "window", garbageWindow)
	}
	g.logged, g.dropped = 0, 0
}
