package mailbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// Bridge delivers the team mail of bound identities to their sessions as
// turns. Its methods are safe for concurrent use and never block on the
// file system: Bind, Unbind, Idle and SetAutoMail only record and signal.
type Bridge struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	teamDir  string
	inboxDir string
	// watching: the watch covers the inboxes directory, so every change
	// of an inbox file reaches kickIdentity (Idle relies on it).
	watching atomic.Bool

	mu      sync.Mutex
	state   bridgeState
	boxes   map[string]*mailbox // every identity ever bound, by name
	off     map[string]bool     // identities with auto-mail switched off
	ctx     context.Context     // set by Start; cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closing chan struct{} // closed by Close
}

type bridgeState int

const (
	stateNew bridgeState = iota
	stateRunning
	stateClosed
)

// mailbox is one identity's delivery state. Its fields are guarded by
// Bridge.mu; its inbox is only read and written by its worker goroutine.
type mailbox struct {
	id       string
	wake     chan struct{} // 1-buffered: a pending check request
	bound    bool
	target   MessageTarget // set by BindTarget: raw messages go here, not to Config.Target
	running  bool          // a worker goroutine serves this mailbox
	inflight *batch        // delivered, waiting for done
	acked    []*batch      // sent (done(true)), waiting to be marked read
	stats    Stats
	// active is the last sign of life: Bind, Idle, mail seen or delivered.
	// The poll skips the mailbox once it is older than Config.IdleTimeout.
	active time.Time
	// changes counts the watch's reports of a change to the inbox file
	// (and everything else that voids quiet).
	changes uint64
	// quiet: the last read found no mail to deliver, nothing was in
	// flight, the watch covered the inbox throughout, and it has reported
	// no change since that read began. Idle then has nothing to read.
	quiet bool
	// frames are the keys of the protocol frames handed to OnFrame that
	// were still unread at the last read: a frame is handed once, and one
	// whose mark failed is marked again without being handed again.
	frames map[string]bool
	// markErr is the last failed mark of frames, said once in the log.
	markErr string
}

// batch is one Deliver call's messages.
type batch struct {
	keys      []string
	raw       bool // went to a MessageTarget
	truncated int
	promptLen int
	started   time.Time
	sentAt    time.Time
	settled   bool // done was called
	attempts  int  // failed MarkRead attempts
}

// maxMarkAttempts bounds the retries of a failed MarkRead; after them the
// batch's messages are given up to a later delivery.
const maxMarkAttempts = 5

// New returns a Bridge for cfg; Start runs it.
func New(cfg Config) (*Bridge, error) {
	switch {
	case cfg.ATM == nil:
		return nil, errors.New("mailbridge: no atm client")
	case cfg.Target == nil:
		return nil, errors.New("mailbridge: no target")
	}
	teamDir, err := cfg.ATM.TeamDir(cfg.Team)
	if err != nil {
		return nil, fmt.Errorf("mailbridge: %w", err)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.MaxMessages <= 0 {
		cfg.MaxMessages = DefaultMaxMessages
	}
	if cfg.MaxMessageLength <= 0 {
		cfg.MaxMessageLength = DefaultMaxMessageLength
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Bridge{
		cfg:      cfg,
		log:      log.With("component", "mailbridge", "team", cfg.Team),
		now:      now,
		teamDir:  teamDir,
		inboxDir: filepath.Join(teamDir, "inboxes"),
		boxes:    map[string]*mailbox{},
		off:      map[string]bool{},
		closing:  make(chan struct{}),
	}, nil
}

// Start starts watching and polling the inboxes of bound identities and
// checks each of them at once. It returns at once; the bridge runs until
// Close is called or ctx is cancelled (Close must still be called to wait
// for its goroutines). A watch that cannot be set up is logged and the
// poll carries on alone. Start fails with ErrClosed when called twice or
// after Close.
func (b *Bridge) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != stateNew {
		return ErrClosed
	}
	b.state = stateRunning
	b.ctx, b.cancel = context.WithCancel(ctx)
	w := b.newWatcher()
	b.wg.Add(1)
	go b.loop(w)
	for _, mb := range b.boxes {
		if mb.bound {
			b.kickLocked(mb)
		}
	}
	return nil
}

// Close stops the bridge and waits for its goroutines. Batches already
// sent are marked read before it returns (bounded by a short timeout); a
// done(true) that arrives after Close marks nothing, so those messages stay
// unread and are delivered again by the next bridge (FR-8.13). Close is
// idempotent.
func (b *Bridge) Close() error {
	b.mu.Lock()
	if b.state == stateClosed {
		b.mu.Unlock()
		b.wg.Wait()
		return nil
	}
	b.state = stateClosed
	close(b.closing)
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
	return nil
}

// Bind records that a session now holds identity: its inbox is watched and
// checked at once, and its mail goes to Config.Target as Codex turns. It
// fails for a name that is not a valid ATM name, and with ErrBound while
// BindTarget holds identity.
func (b *Bridge) Bind(identity string) error {
	return b.bind(identity, nil)
}

// BindTarget binds an identity that no Codex session holds, such as the
// identity of serve's own client (the lead), to t: its inbox is watched
// and checked like a session's, and its unread mail goes to t as raw
// messages (MessageTarget) instead of a Codex envelope. Config.Disabled
// does not apply to it (it starts no Codex turn); SetAutoMail does, and
// Stats, Idle and Unbind work as for Bind. Binding the same identity again
// replaces t. It fails for a name that is not a valid ATM name, for a nil
// t, and with ErrBound while Bind holds identity.
func (b *Bridge) BindTarget(identity string, t MessageTarget) error {
	if t == nil {
		return errors.New("mailbridge: bind target: no target")
	}
	return b.bind(identity, t)
}

func (b *Bridge) bind(identity string, t MessageTarget) error {
	if err := atmclient.ValidateName("identity", identity); err != nil {
		return fmt.Errorf("mailbridge: bind: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	mb := b.boxes[identity]
	if mb == nil {
		mb = &mailbox{id: identity, wake: make(chan struct{}, 1), frames: map[string]bool{}}
		b.boxes[identity] = mb
	}
	if mb.bound && (mb.target == nil) != (t == nil) {
		return fmt.Errorf("%w: %q", ErrBound, identity)
	}
	mb.bound = true
	mb.target = t
	mb.active = b.now()
	mb.quiet = false
	b.kickLocked(mb)
	return nil
}

// Unbind records that no session holds identity any more: its mail is no
// longer delivered and stays unread (FR-8.3). A batch already handed to
// Target is still marked read when Target reports it sent.
func (b *Bridge) Unbind(identity string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if mb := b.boxes[identity]; mb != nil && mb.bound {
		mb.bound = false
		mb.target = nil
		b.kickLocked(mb) // lets an idle worker exit
	}
}

// Idle asks for a check of identity's inbox because its session just
// became idle (the post-turn check, FR-8.1). Calls for identities that are
// not bound are ignored; calls made while a check runs are coalesced into
// one more check.
//
// The check is left out when it could find nothing: the last read found no
// mail to deliver and the file-system watch, which covered the inbox all
// along, has reported no change to it since that read began. Mail that
// arrived during the turn changed the file, so its event voided that, and
// the check it triggered found the mail pending (the session was busy);
// either way Idle reads. A change whose event is still on its way when Idle
// comes is checked when the event arrives. Without a working watch (it is
// disabled, unavailable, or lost the directory) Idle always reads.
func (b *Bridge) Idle(identity string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if mb := b.boxes[identity]; mb != nil && mb.bound {
		mb.active = b.now()
		if mb.quiet && b.watching.Load() && mb.inflight == nil && len(mb.acked) == 0 {
			mb.stats.IdleSkips++
			return
		}
		b.kickLocked(mb)
	}
}

// SetAutoMail switches delivery for one identity on or off (the per-thread
// auto_mail switch, FR-8.8); it is on unless switched off. The setting
// outlives Unbind. Switching on asks for a check.
func (b *Bridge) SetAutoMail(identity string, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if on {
		delete(b.off, identity)
		if mb := b.boxes[identity]; mb != nil && mb.bound {
			b.kickLocked(mb)
		}
		return
	}
	b.off[identity] = true
}

// Stats returns the bridge's counters for identity; the zero Stats (with
// AutoMail set as configured) for an identity never bound.
func (b *Bridge) Stats(identity string) Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s Stats
	if mb := b.boxes[identity]; mb != nil {
		s = mb.stats
		s.Bound = mb.bound
		if mb.inflight != nil {
			s.InFlight += len(mb.inflight.keys)
		}
		for _, bt := range mb.acked {
			s.InFlight += len(bt.keys)
		}
		s.Polling = mb.bound && b.pollingLocked(mb, b.now())
		s.AutoMail = b.autoMailLocked(mb)
		return s
	}
	s.AutoMail = !b.cfg.Disabled && !b.off[identity]
	return s
}

// autoMailLocked reports whether mail may be delivered to mb: not switched
// off for it, and for a session not Disabled. b.mu is held.
func (b *Bridge) autoMailLocked(mb *mailbox) bool {
	return !b.off[mb.id] && (mb.target != nil || !b.cfg.Disabled)
}

// kickLocked asks for a check of mb, starting its worker when the bridge
// runs and none serves it. b.mu is held.
func (b *Bridge) kickLocked(mb *mailbox) {
	if b.state != stateRunning {
		return
	}
	if !mb.running {
		mb.running = true
		b.wg.Add(1)
		go b.serve(mb)
	}
	select {
	case mb.wake <- struct{}{}:
	default: // a check is already pending; it will see this change too
	}
}

// forgetQuiet makes the next Idle of every mailbox read.
func (b *Bridge) forgetQuiet() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, mb := range b.boxes {
		mb.changes++
		mb.quiet = false
	}
}

// kickAll asks for a check of every mailbox that is bound or has batches
// to settle.
func (b *Bridge) kickAll() {
	b.forgetQuiet()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, mb := range b.boxes {
		if mb.bound || mb.inflight != nil || len(mb.acked) > 0 {
			b.kickLocked(mb)
		}
	}
}

// kickPoll is the poll tick: like kickAll, but a bound mailbox quiet for
// longer than Config.IdleTimeout is left to the watch and to Idle.
func (b *Bridge) kickPoll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for _, mb := range b.boxes {
		busy := mb.inflight != nil || len(mb.acked) > 0
		if !busy && (!mb.bound || !b.pollingLocked(mb, now)) {
			continue
		}
		b.kickLocked(mb)
	}
}

// pollingLocked reports whether the poll still covers mb; b.mu is held.
func (b *Bridge) pollingLocked(mb *mailbox, now time.Time) bool {
	return b.cfg.IdleTimeout <= 0 || now.Sub(mb.active) < b.cfg.IdleTimeout
}

// kickIdentity is the watch's report of a change to identity's inbox: it
// asks for a check if identity is bound, and voids what the last read
// found.
func (b *Bridge) kickIdentity(identity string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	mb := b.boxes[identity]
	if mb == nil {
		return
	}
	mb.changes++
	mb.quiet = false
	if mb.bound {
		mb.active = b.now()
		b.kickLocked(mb)
	}
}
