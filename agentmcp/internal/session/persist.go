package session

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// persistDebounce is how long the persister gathers changes before writing.
const persistDebounce = 100 * time.Millisecond

// persister writes sessions' state to the registry on one goroutine, so
// that writes of one session never land out of order and no turn waits for
// an fsync. Busy/idle changes are coalesced: the latest state of each
// session queued within persistDebounce costs one write; a crash can lose
// only the last flip, which the next start marks stale anyway. A new Codex
// thread id is written at once, since resume needs it: when a turn ends
// (now: the caller waits for that write) and when the backend first names
// it, during the turn (soon: from the backend's reader, which must not
// wait; the write is not debounced).
type persister struct {
	reg Registry
	log *slog.Logger

	mu        sync.Mutex            // guards queue and scheduled
	queue     map[*Session]struct{} // sessions to write, their current state
	scheduled bool                  // a write of the queue is due: no need to wake the goroutine

	wake   chan struct{}   // 1-buffered: the queue has work
	urgent chan struct{}   // 1-buffered: the queue has work to write without the debounce
	sync   chan persistNow // writes to do at once
	stop   chan struct{}   // closed by close
	done   chan struct{}   // closed when the goroutine has flushed and ended
}

// persistNow asks for one session's write at once; done is closed after it.
type persistNow struct {
	s    *Session
	done chan struct{}
}

func newPersister(reg Registry, log *slog.Logger) *persister {
	p := &persister{reg: reg, log: log, queue: map[*Session]struct{}{}, wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1),
		sync: make(chan persistNow), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// async queues s for writing; the write takes s's state as it is then, not
// now, so a later write never carries an older state.
//
// Only the first change of a debounce window wakes the persister's
// goroutine: a turn changes its session two or three times, on the request's
// way to Codex and the result's way back, where a wake-up of another thread
// costs the client tens of microseconds on a small machine.
func (p *persister) async(s *Session) {
	p.mu.Lock()
	p.queue[s] = struct{}{}
	wake := !p.scheduled
	p.scheduled = true
	p.mu.Unlock()
	if wake {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// soon queues s for a write without the debounce and returns at once.
func (p *persister) soon(s *Session) {
	p.mu.Lock()
	p.queue[s] = struct{}{}
	p.mu.Unlock()
	select {
	case p.urgent <- struct{}{}:
	default:
	}
}

// now writes s at once and returns after the write (or at once when the
// persister has stopped: the final flush has written everything).
func (p *persister) now(s *Session) {
	req := persistNow{s: s, done: make(chan struct{})}
	select {
	case p.sync <- req:
		<-req.done
	case <-p.done:
		p.write(s)
	}
}

func (p *persister) run() {
	defer close(p.done)
	var debounce <-chan time.Time
	for {
		select {
		case <-p.wake:
			if debounce == nil {
				debounce = time.After(persistDebounce)
			}
		case <-debounce:
			debounce = nil
			p.flush()
		case <-p.urgent:
			p.flush()
		case req := <-p.sync:
			p.mu.Lock()
			delete(p.queue, req.s)
			p.mu.Unlock()
			p.write(req.s)
			close(req.done)
		case <-p.stop:
			p.flush()
			return
		}
	}
}

// close flushes what is queued and stops the goroutine.
func (p *persister) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *persister) flush() {
	p.mu.Lock()
	q := p.queue
	p.queue = map[*Session]struct{}{}
	p.scheduled = false
	p.mu.Unlock()
	for s := range q {
		p.write(s)
	}
}

// write stores the session's current state: thread state, backend id,
// repository facts, activity and the turn count. Identity-binding changes (create, close,
// resume) are not made here; they are written where they happen.
func (p *persister) write(s *Session) {
	rec := s.Record()
	_, err := p.reg.Update(rec.AgentID, func(x *registry.Session) {
		x.Turns = max(x.Turns, rec.Turns) // a turn that ended just before a close counts
		if rec.Usage != nil && (x.Usage == nil || rec.Usage.TotalTokens >= x.Usage.TotalTokens) {
			x.Usage = rec.Usage // a close's summary turn counts too
		}
		x.Model, x.BudgetTokens = firstNonEmpty(rec.Model, x.Model), rec.BudgetTokens
		if !x.Status.Live() {
			return // closed meanwhile: the close wrote the final state
		}
		x.BackendID = rec.BackendID
		x.ThreadState = rec.ThreadState
		x.RepoRoot, x.RepoName, x.Branch, x.Cwd = rec.RepoRoot, rec.RepoName, rec.Branch, rec.Cwd
		x.LastActive = rec.LastActive
		x.LastResult = rec.LastResult
		if rec.ForkedFrom != nil {
			x.ForkedFrom = rec.ForkedFrom // a fork's parent, known once its thread is
		}
		x.Extra = rec.Extra
		switch rec.ThreadState {
		case registry.ThreadBusy:
			x.Status = registry.StatusBusy
		case registry.ThreadIdle:
			x.Status = registry.StatusIdle
		}
	})
	if err != nil && !errors.Is(err, registry.ErrClosed) && !errors.Is(err, registry.ErrSessionNotFound) {
		p.log.Error("cannot persist session", "agent_id", rec.AgentID, "err", err)
	}
	if err == nil {
		s.mu.Lock()
		s.savedThread = rec.BackendID
		s.mu.Unlock()
	}
}
