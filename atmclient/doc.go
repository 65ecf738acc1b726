// Package atmclient reads and writes ATM team inboxes under
// {home}/.claude/teams, compatible with the atm CLI and Claude Code: what
// they write, it reads; what it writes, they read; and none of them loses a
// message when all of them write at once.
//
// Layout: the home is $ATM_HOME (trimmed, non-empty) else $HOME (see Home);
// a team lives in {home}/.claude/teams/{team}/ with its members in
// config.json (see Team) and one inbox per member in inboxes/{name}.json, a
// JSON array of messages (see Message). Every team and agent name is checked
// by ValidateName before it becomes part of a path.
//
// A Client, built by New, does everything else: Send and Broadcast append
// messages, Read lists them with filters, MarkRead marks them by Key,
// Pending counts unread mail, Repair puts back what a writer that ignores
// the lock overwrote (see "The journal"). Claude Code's protocol messages
// (idle notifications and similar JSON-in-text messages, see
// Message.IsProtocol) are not mail: Read and Pending leave them out unless
// asked. Message.Frame gives their typed view; ShutdownResponseText and
// IdleNotification build the frames a teammate sends. A message's id is
// its "message_id", or the "msg_id" Claude Code 2.1.332 writes
// (Message.ID); both dedup appends and name the message in MarkRead.
//
// # File format
//
// An inbox is written as a pretty JSON array: two-space indentation, no HTML
// escaping, raw UTF-8, no trailing newline, "[]" when empty — what serde_json
// and JSON.stringify(…, null, 2) produce. A message this package creates has
// its keys in the order from, source_team, text, timestamp, read, summary,
// message_id; its timestamp is UTC with nine fractional digits and a "Z"
// (TimestampLayout). Messages already in the file are kept byte for byte
// (re-indented if another writer used another layout); marking one read
// only changes its "read" value (or appends "read": true). Unknown keys,
// "content" used for "text", null summaries and ids, and elements that are
// not messages at all are all preserved. Reading is tolerant: an element
// that is not a message is reported in ReadResult.Problems and kept; a file
// that is not a JSON array, or holds an element that is not JSON, is an
// error (ErrCorruptInbox) and is never rewritten.
//
// # Design notes
//
// Writers follow the atm CLI's protocol. Under an exclusive flock(2) (taken
// with github.com/gofrs/flock, which takes LockFileEx on Windows) on
// inboxes/{agent}.lock (a sidecar that is never replaced or removed) a
// writer reads the inbox, repairs it from the journal (below), applies its
// change (an append is dropped when a message with the same message_id is
// there), records what it restored and changed in the journal and fsyncs
// it, writes inboxes/{agent}.tmp as a new file and fsyncs it, then
// exchanges it with the inbox atomically (renameat2 RENAME_EXCHANGE on
// Linux, renamex_np RENAME_SWAP on macOS; a rename that refuses to replace
// when there was no inbox). The displaced file, now at the tmp path, is
// compared byte for byte with what was read. If it differs, a writer that
// ignores the lock (Claude Code does) wrote in between: its messages that
// ours lacks — by message_id, or by (from, timestamp instant, text) for
// id-less ones — are recorded in the journal and merged in, the result is
// sorted stably by timestamp instant (elements without one first), and the
// exchange is repeated. A displaced file that cannot be parsed even after
// a short wait, or that still brings new messages after 16 rounds, is kept
// aside as {agent}.json.unmerged-{nanos}, never deleted. Finally the tmp
// file is removed and the lock released. Readers take no lock; the inbox
// path always names a complete file, so a reader sees the state before or
// after a write, never half of one. Only a lock-ignoring writer, which
// truncates and rewrites the file in place, can be caught half way: every
// reader and writer re-reads an unparsable file for about 160 ms before
// calling it corrupt.
//
// The lock is taken with LOCK_NB, polling every 1 to 2 ms, and abandoned
// after Config.LockTimeout (default 1.55 s, the total of the atm CLI's
// 50…800 ms backoff). Polling more often than the atm CLI's schedule keeps
// waiters from starving under contention; the lock itself is the same.
//
// The window. A lock-ignoring writer W reads the whole file, changes it and
// writes it back in place. Against our exchange E:
//
//   - W writes entirely before our read, or reads after E: nothing to do.
//   - W writes (into the file we read) after our read and before E: its
//     bytes are in the displaced file and are merged. Nothing is lost.
//   - W read before E and opens the file after E: it overwrites our new
//     file with its stale copy. What E added — our message, or, when E is
//     a merge exchange, W's own earlier messages that we were merging
//     back — is missing until the next locked write, which restores it
//     from the journal. No writer can notice at the time.
//   - W opened the file before E and its bytes land after we read the
//     displaced file: they go into the displaced inode, which we unlink, so
//     W's message is lost. We never saw it, so the journal cannot help.
//
// The last loss needs W's open-to-write interval to straddle our exchange.
// The concurrency test asserts that after a final Repair every locked
// message is present exactly once, that every missing lock-ignoring message
// is explained by such a straddle, and that nothing is ever duplicated.
//
// # The journal
//
// Beside each inbox a locked writer keeps inboxes/{agent}.journal, read
// and written only under the inbox lock; the atm CLI and Claude Code ignore
// it, and the inbox file is byte for byte what it would be without it. Each
// line is one record,
//
//	{"at":"2026-03-18T20:21:33.123456789Z","message":{…}}
//
// the instant it was written and a message element (compact JSON) as this
// package put it into the inbox: every message Send and Broadcast append,
// every message MarkRead marks (with "read": true), every lock-ignoring
// message merged from a displaced file, and every message a repair restores.
// The last record of a message (by Key) is its state. Before its own
// change, every locked write — Send, Broadcast, MarkRead and Repair — puts
// back each message with a live record that the inbox lacks, as recorded
// (merged and sorted like a merge), and marks read again each message the
// inbox holds unread whose record is read: read is one-way, a repair never
// marks a message unread. Read and Pending take no lock and repair
// nothing; a message a stale rewrite took out stays missing for them until
// the next locked write.
//
// Order and crashes: the records of a write are appended (O_APPEND, one
// write) and fsynced before the tmp file is written, so a record never
// follows the exchange it describes. A writer killed in between leaves a
// record whose message never reached the inbox, and the next locked write
// delivers it: a message whose Send did not return may still be delivered,
// never twice (it is keyed by message_id). A record cut short by a kill is
// skipped, and the next one starts on a line of its own. A crash is always
// safe for the inbox: the tmp file is fsynced before the exchange, so the
// inbox is the old or the new complete file, and a crash after the
// exchange only loses the merge of a concurrent lock-ignoring write.
//
// What a repair cannot restore: messages this package never saw (the last
// case of the window), changes other writers made to messages (the atm
// CLI's read and pendingAckAt, Claude Code's read), and elements that are
// not messages. Conversely, a message that another tool removes within the
// retention below is put back; the protocol has no deletion.
//
// Bounds and the residual window. A record is live for 10 minutes, and
// while it is among the newest 4 MiB of records of its journal; only live
// records are used. A journal over 256 KiB of which less than half is live
// is rewritten with its live records (a new file, fsynced and renamed over
// it: the journal is not the lock file, so replacing it is safe), so it
// stays under about twice its live bytes and an append costs O(1)
// amortized. A stale rewrite is undone only while the record of what it
// took out is live: a lock-ignoring writer that holds its copy for more
// than 10 minutes, or while more than 4 MiB of newer records are written,
// overwrites for good. (Claude Code's read-to-write interval is
// milliseconds.)
//
// Clients remember the last parse of each inbox; when a file has only grown
// by appended elements, only the new elements are parsed. They also
// remember the journal they last read and read only the records appended
// since (the file is recognized by its inode and the bytes before the
// parsed end). That keeps an append to an inbox of thousands of messages
// cheap.
package atmclient
