// Package mailbridge turns team mail addressed to a bound identity into
// Codex turns (FR-8): a message sent to an identity whose session is idle
// starts a mail turn within milliseconds, and a message that arrives during
// a turn is delivered right after it.
//
// The proxy owns the sessions; it tells a Bridge which identities are bound
// (Bind, BindTarget, Unbind), when a session becomes idle (Idle, the post-turn check of
// FR-8.1) and which sessions have auto-mail switched off (SetAutoMail,
// Config.Disabled). The Bridge reads the inboxes with an atmclient.Client
// and hands each batch, wrapped by Envelope, to the proxy's Target, which
// starts the turn only if the session is idle with nothing queued.
//
// What is mail: every unread message of the identity's inbox, identified
// by atmclient.Message.Key: its message_id, or the msg_id that Claude Code
// 2.1.332 writes instead (atmclient.Message.ID), or for older id-less
// messages a hash of sender, time and text. A key is delivered once per
// check, so a second copy of the same id goes with the first and is marked
// read with it. Mail to an identity that nobody binds stays unread
// (FR-8.3).
//
// Claude Code's dialect. Claude Code puts its protocol in the text of a
// message as a JSON object with a "type" (atmclient.Message.Frame):
// shutdown_request and shutdown_response, idle_notification,
// plan_approval_*, permission_* and the like. Frames are not mail: they
// never go into an envelope or to a MessageTarget. With Config.OnFrame set,
// every unread frame of a bound inbox is handed to it once, in inbox order,
// before the mail of the same check and whatever the auto-mail switches
// say (a shutdown request must work with auto-mail off); the proxy decides
// what a frame means (proxy/frames.go: a shutdown_request closes the
// session and is answered). A frame in the inbox of an identity bound with
// Bind is then marked read, so a crash before the mark hands it again to
// the next bridge (at-least-once, like mail); a failed mark is retried at
// the next check without handing the frame again. A frame in the inbox of
// an identity bound with BindTarget is handed over but left unread: that
// inbox belongs to serve's client, whose own reader (Claude Code's lead)
// renders idle notifications as "Teammate @codex1 finished" and would
// never see one marked read. Without OnFrame, frames are neither handed
// over nor marked.
//
// Two kinds of binding. Bind is for an identity that a Codex session
// holds: its mail becomes Codex turns through Target, as an Envelope. An
// identity without a Codex session, the one serve holds for its own client
// (the lead), is bound with BindTarget and its MessageTarget: its mail is
// handed over as raw messages (for the proxy to push into the client's
// session), with the same at-least-once contract, order, batch size, Idle,
// Stats and Unbind. Config.Disabled stops only Codex turns; SetAutoMail
// switches either kind. An inbox has one consumer: binding an identity of
// one kind while it is bound as the other fails with ErrBound.
//
// # Design notes
//
// Triggers. One goroutine per bridge runs a file-system watch (fsnotify:
// inotify on Linux, kqueue on macOS and the BSDs, ReadDirectoryChangesW on
// Windows) on the team's inboxes directory — the directory, because every
// write replaces an inbox file by a rename or an atomic exchange, which
// would silently end a watch on the file — and a poll ticker
// (Config.PollInterval, mail_poll_interval_ms) as the safety net for missed
// events, watch limits and network file systems. On Linux one atm write
// shows up as a create and a rename of inboxes/{identity}.json (the two
// halves of the exchange); the first one triggers the check, which then
// reads the complete new file. When the inboxes directory does not exist
// yet, the team directory is watched until it appears.
// An event for inboxes/{identity}.json, a poll tick, Bind, Idle and
// SetAutoMail all do the same thing: they ask for a check of the identity.
// Asking never blocks: it is a send on a one-slot channel, so a burst of
// events while a check runs collapses into one more check, and a request
// made during a check is never lost. Idle alone may find that there is
// nothing to check: when the last read found no mail and the watch, which
// covered the inbox throughout, has reported no change to it since that
// read began, the file still holds no mail and Idle reads nothing (a
// session's every turn ends with an Idle; most find an unchanged inbox).
// Mail that arrived during the turn changed the file, and the check its
// event triggered found it pending, so the Idle after the turn reads it.
//
// Ordering. Each bound identity has one worker goroutine that does every
// inbox read and write for it, so checks of one identity never overlap and
// batches leave in inbox order. A check reads the unread mail, leaves out
// the messages of batches not yet settled, takes the oldest MaxMessages and
// calls Target.Deliver. At most one batch per identity is in flight: while
// Target has not reported a batch, no other is offered, so a later message
// can never overtake an earlier one. When more mail is left (a burst of 15
// with MaxMessages 10), the proxy's Idle at the end of the mail turn brings
// the rest. If Deliver returns false (the session is busy or has Claude's
// requests queued, FR-8.10, FR-17.6) nothing happens; the Idle at the end
// of the busy period checks again.
//
// At-least-once (FR-8.6, FR-8.12, FR-8.13). Messages are marked read only
// after Target calls done(true), which the proxy does once the Codex child
// has acknowledged the mail turn (codexchild's TurnRequest.OnAccepted:
// app-server's turn/start response, mcp-server's first event of the turn),
// or once the turn ended unacknowledged on a child that lives on (it has
// the request); a MessageTarget calls it once the messages reached its
// client. A child that dies, or that a restart stops, after the write but
// before its acknowledgement may never have read the turn: the proxy calls
// done(false) and the messages stay unread, to be offered again when Codex
// is back. The worker, not the proxy's goroutine, then calls MarkRead for
// exactly the keys of that batch, and only then reports the batch to
// Config.OnBatch. A crash of the proxy at any point before MarkRead leaves
// the messages unread, and the next bridge delivers them again. Either way
// the price is a possible duplicate, never a loss: a message reaches Codex
// twice when Codex read the turn and died before acknowledging it, or when
// the proxy died between the acknowledgement and MarkRead. The envelope
// carries each message's message_id, or its stable key for id-less mail, so
// the agent can recognize a repeat. done(false), a done that never comes
// within Config.AckTimeout, and a MarkRead that keeps failing all leave the
// messages unread to be offered again. Close makes a last, bounded attempt
// to mark the batches already sent.
package mailbridge
