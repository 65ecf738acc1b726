package mcpconn

import (
	"slices"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

// outItem is a message waiting for the pump: an event, or (progress set)
// a request's progress, which the pump builds and writes under omu, and
// not at all once the request has been answered.
type outItem struct {
	build    func() *jsonrpcframe.Message
	progress *Progress
}

// maxEventBatch bounds how many queued events the pump writes at once.
const maxEventBatch = 64

// pump writes queued events until stop. Events that are already queued go
// out together, in one write, when the writer can batch.
func (c *outbox) pump() {
	defer close(c.pumpDone)
	bw, canBatch := c.w.(jsonrpcframe.BatchWriter)
	limit := 1
	if canBatch {
		limit = maxEventBatch
	}
	items := make([]outItem, 0, maxEventBatch)
	batch := make([]*jsonrpcframe.Message, 0, maxEventBatch)
	for {
		select {
		case <-c.wake:
		case <-c.stopPump:
			return
		}
		for {
			c.emu.Lock()
			if c.writing || len(c.held) > 0 || len(c.queue) == 0 {
				c.emu.Unlock()
				break
			}
			n := min(len(c.queue), limit)
			items = append(items[:0], c.queue[:n]...)
			c.queue = c.queue[:copy(c.queue, c.queue[n:])]
			c.writing = true
			c.emu.Unlock()

			// A batch with progress is built and written under omu: the
			// pump may wait for a response being written, never the
			// other way round.
			ordered := slices.ContainsFunc(items, func(it outItem) bool { return it.progress != nil })
			if ordered {
				c.omu.Lock()
			}
			batch = batch[:0]
			for _, it := range items {
				if it.progress != nil && it.progress.done.Load() {
					continue // answered meanwhile: no progress after the response
				}
				if m := it.build(); m != nil {
					batch = append(batch, m)
				}
			}
			clear(items)
			var err error
			switch {
			case len(batch) == 0:
			case canBatch:
				err = bw.WriteBatch(batch)
			default:
				err = c.w.Write(batch[0])
			}
			clear(batch)
			if ordered {
				c.omu.Unlock()
			}
			if err != nil {
				c.markGone(err)
			}
			c.emu.Lock()
			c.writing = false
			c.emu.Unlock()
		}
	}
}
