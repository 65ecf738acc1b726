package mailbridge

import (
	"errors"
	"log/slog"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// Defaults for the zero values of Config.
const (
	// DefaultPollInterval is how often every bound inbox is read even
	// without a file-system event (mail_poll_interval_ms = 5000).
	DefaultPollInterval = 5 * time.Second
	// DefaultMaxMessages is how many messages one mail turn carries at most
	// (max_messages, FR-8.5).
	DefaultMaxMessages = 10
	// DefaultMaxMessageLength is how many characters of one message's text a
	// mail turn carries at most (max_message_length, FR-8.5).
	DefaultMaxMessageLength = 4096
	// DefaultAckTimeout is how long a delivered batch may stay unsettled
	// (Target never calls its done function) before its messages are
	// offered again.
	DefaultAckTimeout = time.Minute
)

// ErrClosed is returned by Start on a Bridge that was started before or
// closed.
var ErrClosed = errors.New("mailbridge: bridge already started or closed")

// ErrBound is returned by Bind for an identity bound with BindTarget, and
// by BindTarget for one bound with Bind: an inbox has one consumer.
var ErrBound = errors.New("mailbridge: identity already bound to the other kind of target")

// Target is the consumer side of the bridge: the proxy, which owns the
// sessions and the Codex child.
type Target interface {
	// Deliver starts a mail turn with prompt on the session bound to
	// identity, but only if that session is idle, has nothing queued and
	// has auto-mail on (FR-8.10, FR-17.6). msgs are the messages prompt
	// carries (the Envelope of them), oldest first, so that the proxy knows
	// whom to tell when the turn ends; they must not be modified. It must
	// not block: it is called
	// on the bridge's goroutine for identity, and no other check of that
	// identity runs until it returns.
	//
	// It returns false when it did not start the turn; then it must not
	// call done, and nothing is marked read (the proxy calls Bridge.Idle
	// when the session becomes idle). When it returns true it must call
	// done exactly once, from any goroutine, possibly before Deliver
	// returns: done(true) once the Codex child has acknowledged the turn
	// (FR-8.12; see the package doc), which marks the messages read;
	// done(false) when the request was never written or the child died
	// before acknowledging it, which leaves them unread to be offered again
	// at a later check. done never blocks.
	Deliver(identity, prompt string, msgs []atmclient.Message, done func(sent bool)) bool
}

// MessageTarget is the consumer side for an identity that no Codex session
// holds, bound with Bridge.BindTarget: the identity of serve's own client
// (the lead), whose mail goes to that client rather than into a Codex
// turn.
type MessageTarget interface {
	// DeliverMessages hands identity's unread mail to the target: at most
	// Config.MaxMessages messages, oldest first, protocol frames left out
	// (they go to Config.OnFrame), texts not cut. The contract is
	// Target.Deliver's: it must not block; false means nothing happened
	// (done is not called, nothing is marked, the next check offers the
	// messages again); true means done is called exactly once, and
	// done(true) marks exactly these messages read. msgs must not be
	// modified.
	DeliverMessages(identity string, msgs []atmclient.Message, done func(sent bool)) bool
}

// Config configures a Bridge. ATM, Team and Target are required; every
// other zero value is documented.
type Config struct {
	// ATM reads and marks the inboxes. Required.
	ATM *atmclient.Client
	// Team is the team whose inboxes the bridge serves. Required.
	Team string
	// Target starts mail turns. Required.
	Target Target

	// PollInterval is the safety-net poll of every bound inbox, for missed
	// file-system events and network file systems (mail_poll_interval_ms).
	// Optional: 0 means DefaultPollInterval.
	PollInterval time.Duration
	// MaxMessages is the most messages one mail turn carries; the rest
	// waits for the next check (max_messages). Optional: 0 means
	// DefaultMaxMessages.
	MaxMessages int
	// MaxMessageLength is the most characters (runes) of one message's
	// text a mail turn carries; longer texts are cut with a visible marker
	// (max_message_length). Optional: 0 means DefaultMaxMessageLength.
	MaxMessageLength int
	// AckTimeout bounds the wait for Target's done call; after it the
	// batch's messages are offered again (a late done(true) still marks
	// them read). Optional: 0 means DefaultAckTimeout.
	AckTimeout time.Duration

	// IdleTimeout stops the safety-net poll of an identity after this long
	// without mail or activity (idle_timeout_ms); the file-system watch, a
	// post-turn Idle and Bind keep working and start the poll again.
	// Optional: 0 means the poll never stops.
	IdleTimeout time.Duration

	// Disabled turns auto-mail off globally (auto_mail = false, FR-8.8):
	// bound inboxes are still watched and counted (Stats.Pending) but
	// nothing is delivered. Optional: false means deliver.
	Disabled bool
	// DisableWatch turns the file-system watch off and leaves only the
	// poll, for file systems whose change notifications are unreliable
	// (and for tests of the poll). Optional: false means watch.
	DisableWatch bool

	// OnFrame receives the Claude Code protocol frames (see
	// atmclient.Message.Frame: shutdown_request, plan_approval_request,
	// permission_request, idle_notification, …) found unread in a bound
	// identity's inbox, each once per bridge, oldest first, whatever the
	// auto-mail switches say. It runs on the bridge's goroutine for the
	// identity and must not block (slow work belongs on a goroutine of its
	// own). Once it returns, a frame addressed to an identity bound with
	// Bind is marked read; one addressed to an identity bound with
	// BindTarget is left unread for that identity's own reader (Claude
	// Code's lead reads its inbox and renders idle notifications itself).
	// Optional: nil leaves every frame unread and unhandled.
	OnFrame func(identity string, m atmclient.Message, f atmclient.Frame)
	// OnBatch is called once for every batch Target sent (done(true)),
	// after the attempt to mark its messages read: the audit record of an
	// injected batch. It runs on the bridge's goroutine for the identity
	// and should return quickly. Optional: nil means no callback.
	OnBatch func(Batch)
	// Logger receives warnings (failed reads and marks, unsettled batches)
	// and debug records. Optional: nil discards.
	Logger *slog.Logger
	// Now is the clock for Stats and Batch times and for AckTimeout.
	// Optional: nil means time.Now.
	Now func() time.Time
}

// Batch describes one injected mail turn, for the audit log.
type Batch struct {
	Identity  string    // the recipient (the session's bound identity)
	Team      string    // the recipient's team
	Keys      []string  // atmclient.Message.Key of every message, in envelope order
	Truncated int       // how many of the texts were cut at MaxMessageLength
	PromptLen int       // length of the prompt in bytes
	SentAt    time.Time // when Target reported the request written (done(true))
	Marked    int       // how many messages MarkRead marked (fewer when another reader marked some first)
	Err       error     // nil, or why the messages could not be marked read (they stay unread and come again)
	// Raw: the batch went to a MessageTarget (BindTarget) as raw
	// messages, not to a Codex turn; PromptLen and Truncated are 0.
	Raw bool
}

// Stats is the bridge's view of one identity's mail.
type Stats struct {
	Bound        bool      // a session holds the identity (Bind without Unbind), or a MessageTarget does (BindTarget)
	AutoMail     bool      // delivery is on: not switched off for the identity, and for a session not Disabled
	Delivered    int       // messages in batches Target sent
	Batches      int       // batches Target sent
	Pending      int       // unread mail not yet delivered, as of the last check
	InFlight     int       // messages delivered but not yet sent or not yet marked read
	LastDelivery time.Time // when the last batch was sent; zero if none
	LastCheck    time.Time // when the inbox was last read; zero if never
	LastError    string    // the last failed read or mark, cleared by a successful one
	Polling      bool      // the safety-net poll still covers the identity (see Config.IdleTimeout)
	IdleSkips    int       // Idle calls that read nothing: the watch saw no change since a read that found no mail
	Frames       int       // protocol frames handed to Config.OnFrame
}
