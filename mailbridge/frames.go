package mailbridge

import "github.com/atm-agent-mcp/atm-agent-mcp/atmclient"

// frameMsg is an unread protocol frame and the message that carries it.
type frameMsg struct {
	m atmclient.Message
	f atmclient.Frame
}

// frames hands the protocol frames of a check to Config.OnFrame and, for an
// identity bound with Bind, marks them read. It runs on mb's worker with
// frames in inbox order (every unread frame of the inbox). A frame is handed
// once per bridge: mb.frames remembers what was handed while it is still
// unread, so a frame whose mark failed is only marked again, and a frame
// left unread on purpose (an identity bound with BindTarget) is not handed
// again at every check. frames reports whether handed frames are still
// waiting to be marked (the next check tries again).
func (b *Bridge) frames(mb *mailbox, frames []frameMsg) (left bool) {
	if b.cfg.OnFrame == nil {
		return false
	}
	b.mu.Lock()
	mark := mb.target == nil
	unread := make(map[string]bool, len(frames))
	var hand []frameMsg
	var keys []string
	for _, fm := range frames {
		k := fm.m.Key()
		if unread[k] {
			continue // the same frame twice in the file: one hand-over, one mark
		}
		unread[k] = true
		keys = append(keys, k)
		if !mb.frames[k] {
			mb.frames[k] = true
			hand = append(hand, fm)
		}
	}
	for k := range mb.frames {
		if !unread[k] {
			delete(mb.frames, k) // marked, or gone from the file
		}
	}
	mb.stats.Frames += len(hand)
	b.mu.Unlock()

	for _, fm := range hand {
		b.log.Debug("protocol frame", "identity", mb.id, "type", fm.f.Type, "from", fm.m.From, "key", fm.m.Key())
		b.cfg.OnFrame(mb.id, fm.m, fm.f)
	}
	if !mark || len(keys) == 0 || b.ctx.Err() != nil {
		return false
	}
	marked, err := b.cfg.ATM.MarkRead(b.ctx, b.cfg.Team, mb.id, keys...)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		repeat := mb.markErr == err.Error()
		mb.markErr = err.Error()
		mb.stats.LastError = mb.markErr
		if !repeat && b.ctx.Err() == nil {
			b.log.Warn("could not mark protocol frames read; will retry", "identity", mb.id, "frames", len(keys), "err", err)
		}
		return true
	}
	mb.markErr = ""
	b.log.Debug("protocol frames marked read", "identity", mb.id, "frames", len(keys), "marked", marked)
	return false
}
