package mailbridge

import (
	"context"
	"errors"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// finalMarkTimeout bounds the last MarkRead of a worker when the bridge
// closes: long enough for one inbox lock wait.
const finalMarkTimeout = atmclient.DefaultLockTimeout + 500*time.Millisecond

// serve is the worker of one mailbox: every inbox read and write of the
// identity happens here, one at a time. It runs while the identity is bound
// or has batches to settle, and until the bridge closes; then it makes a
// last attempt to mark sent batches read.
func (b *Bridge) serve(mb *mailbox) {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
		case <-mb.wake:
		}
		if b.ctx.Err() != nil {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), finalMarkTimeout)
			b.markSent(fctx, mb, true)
			cancel()
			return
		}
		b.markSent(b.ctx, mb, false)
		b.check(mb)
		b.mu.Lock()
		if !mb.bound && mb.inflight == nil && len(mb.acked) == 0 {
			mb.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
}

// markSent marks read the messages of every batch Target reported sent,
// one MarkRead per batch, and reports each batch to OnBatch. A failed mark
// is retried at the next check, up to maxMarkAttempts (only once when
// final); meanwhile those messages are not offered again, and after that
// they are left unread for a later delivery. markSent also expires an
// in-flight batch older than AckTimeout.
func (b *Bridge) markSent(ctx context.Context, mb *mailbox, final bool) {
	b.mu.Lock()
	if bt := mb.inflight; bt != nil && b.now().Sub(bt.started) > b.cfg.AckTimeout {
		mb.inflight = nil
		b.log.Warn("delivered mail was never reported sent; offering it again", "identity", mb.id,
			"messages", len(bt.keys), "after", b.cfg.AckTimeout)
	}
	batches := mb.acked
	b.mu.Unlock()
	for _, bt := range batches {
		marked, err := b.cfg.ATM.MarkRead(ctx, b.cfg.Team, mb.id, bt.keys...)
		b.mu.Lock()
		if err != nil {
			mb.stats.LastError = err.Error()
			bt.attempts++
			if bt.attempts < maxMarkAttempts && !final {
				b.mu.Unlock()
				b.log.Warn("could not mark delivered mail read; will retry", "identity", mb.id,
					"messages", len(bt.keys), "attempt", bt.attempts, "err", err)
				continue
			}
			b.log.Warn("could not mark delivered mail read; it stays unread and may come again", "identity", mb.id,
				"messages", len(bt.keys), "attempts", bt.attempts, "err", err)
		} else {
			mb.stats.LastError = ""
			b.log.Debug("delivered mail marked read", "identity", mb.id, "messages", len(bt.keys), "marked", marked)
		}
		mb.acked = removeBatch(mb.acked, bt)
		b.mu.Unlock()
		if b.cfg.OnBatch != nil {
			b.cfg.OnBatch(Batch{
				Identity:  mb.id,
				Team:      b.cfg.Team,
				Keys:      bt.keys,
				Truncated: bt.truncated,
				PromptLen: bt.promptLen,
				SentAt:    bt.sentAt,
				Marked:    marked,
				Err:       err,
				Raw:       bt.raw,
			})
		}
	}
}

// removeBatch returns list without bt, keeping order.
func removeBatch(list []*batch, bt *batch) []*batch {
	out := list[:0:0]
	for _, x := range list {
		if x != bt {
			out = append(out, x)
		}
	}
	return out
}

// check reads identity's unread messages, hands new protocol frames to
// OnFrame (and marks them read), and, when delivery is allowed and no batch
// is in flight, hands the oldest MaxMessages of the mail to Target (or to
// the identity's MessageTarget).
func (b *Bridge) check(mb *mailbox) {
	b.mu.Lock()
	if !mb.bound || b.ctx.Err() != nil {
		b.mu.Unlock()
		return
	}
	changes, watched := mb.changes, b.watching.Load()
	mb.quiet = false
	// A batch in flight now may settle during the read: sent, its keys
	// stay skipped (acked); not sent, they are due again, and a delivery
	// from this read, which skipped them, would let later mail overtake
	// them. So a check that began with a batch in flight delivers nothing.
	wasInFlight := mb.inflight != nil
	skip := map[string]bool{}
	if mb.inflight != nil {
		for _, k := range mb.inflight.keys {
			skip[k] = true
		}
	}
	for _, bt := range mb.acked {
		for _, k := range bt.keys {
			skip[k] = true
		}
	}
	b.mu.Unlock()

	// Protocol frames are read too: they are not mail, and never go into
	// a delivery, but OnFrame gets them (see frames).
	res, err := b.cfg.ATM.Read(b.ctx, b.cfg.Team, mb.id, atmclient.ReadOptions{IncludeProtocol: b.cfg.OnFrame != nil})
	now := b.now()
	if err != nil {
		b.mu.Lock()
		mb.stats.LastCheck = now
		repeat := mb.stats.LastError == err.Error()
		mb.stats.LastError = err.Error()
		b.mu.Unlock()
		switch {
		case b.ctx.Err() != nil:
		case repeat:
			// Said once already (a missing team used to flood the log
			// every poll): agent_status shows it as the mail's last error.
			b.log.Debug("could not read inbox (again)", "identity", mb.id, "err", err)
		case errors.Is(err, atmclient.ErrTeamNotFound):
			b.log.Warn("could not read inbox: the team does not exist; create it (a Claude Code agent team, or the atm CLI) or start serve with --team", "identity", mb.id, "err", err)
		default:
			b.log.Warn("could not read inbox", "identity", mb.id, "err", err)
		}
		return
	}
	var unread []atmclient.Message
	var frames []frameMsg
	for _, m := range res.Messages {
		if f, ok := m.Frame(); ok {
			frames = append(frames, frameMsg{m, f})
			continue
		}
		// A key is delivered once: a second copy of a message (the same
		// message_id or msg_id, written twice by a merge or a retry) is
		// left out, and marked read with the first.
		if k := m.Key(); !skip[k] {
			skip[k] = true
			unread = append(unread, m)
		}
	}
	framesLeft := b.frames(mb, frames)
	msgs := unread[:min(len(unread), b.cfg.MaxMessages)]

	b.mu.Lock()
	mb.stats.LastCheck = now
	if mb.markErr == "" {
		mb.stats.LastError = ""
	}
	mb.stats.Pending = len(unread)
	if len(unread) > 0 {
		mb.active = now // mail keeps the poll going
	}
	mb.quiet = len(unread) == 0 && !framesLeft && watched && b.watching.Load() && mb.changes == changes &&
		mb.inflight == nil && len(mb.acked) == 0
	target := mb.target
	deliver := mb.bound && mb.inflight == nil && b.autoMailLocked(mb) && len(msgs) > 0 && b.ctx.Err() == nil
	if deliver && wasInFlight {
		// The batch settled during the read (see wasInFlight): read again.
		b.kickLocked(mb)
		deliver = false
	}
	if !deliver {
		b.mu.Unlock()
		return
	}
	bt := &batch{keys: make([]string, len(msgs)), started: now, raw: target != nil}
	for i, m := range msgs {
		bt.keys[i] = m.Key()
		if _, _, cut := truncate(m.Text, b.cfg.MaxMessageLength); cut && target == nil {
			bt.truncated++
		}
	}
	mb.inflight = bt
	b.mu.Unlock()

	done := func(sent bool) { b.settle(mb, bt, sent) }
	var ok bool
	if target != nil {
		ok = target.DeliverMessages(mb.id, msgs, done)
	} else {
		prompt := Envelope(b.cfg.Team, msgs, b.cfg.MaxMessageLength)
		bt.promptLen = len(prompt)
		ok = b.cfg.Target.Deliver(mb.id, prompt, msgs, done)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if !ok {
		if mb.inflight == bt {
			mb.inflight = nil
		}
		b.log.Debug("not ready for mail", "identity", mb.id, "pending", len(unread))
		return
	}
	mb.stats.Pending = len(unread) - len(msgs)
	b.log.Debug("mail delivered", "identity", mb.id, "messages", len(msgs), "pending", mb.stats.Pending, "raw", target != nil)
}

// settle is a batch's done function: Target reports whether the turn
// request was written. Only the first call counts.
func (b *Bridge) settle(mb *mailbox, bt *batch, sent bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bt.settled {
		b.log.Warn("mail batch settled twice; ignoring the second call", "identity", mb.id, "sent", sent)
		return
	}
	bt.settled = true
	if mb.inflight == bt {
		mb.inflight = nil
	}
	if !sent {
		// No check now: a session whose write just failed would fail the
		// next one too. The next Idle or poll offers the messages again.
		b.log.Debug("mail turn not sent; messages stay unread", "identity", mb.id, "messages", len(bt.keys))
		return
	}
	if b.state != stateRunning {
		b.log.Warn("mail turn reported sent after the bridge closed; messages stay unread and come again",
			"identity", mb.id, "messages", len(bt.keys))
		return
	}
	bt.sentAt = b.now()
	mb.acked = append(mb.acked, bt)
	mb.stats.Delivered += len(bt.keys)
	mb.stats.Batches++
	mb.stats.LastDelivery = bt.sentAt
	b.kickLocked(mb)
}
