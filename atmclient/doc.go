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
// Pending counts unread mail, Repair finishes a write whose writer was
// killed half way (see "The journal"), JoinTeam and LeaveTeam add and
// remove a member in config.json. Claude Code's protocol messages
// (idle notifications and similar JSON-in-text messages, see
// Message.IsProtocol) are not mail: Read and Pending leave them out unless
// asked, and Send writes them without an automatic summary, as Claude Code
// does. Message.Frame gives their typed view; ShutdownResponseText and
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
// not messages at all are all preserved; so is Claude Code's "msg_id"
// (never renamed to "message_id"). Reading is tolerant: an element
// that is not a message is reported in ReadResult.Problems and kept; a file
// that is not a JSON array, or holds an element that is not JSON, is an
// error (ErrCorruptInbox) and is never rewritten. Entries may disappear:
// Claude Code's reader removes what it delivered (below); Read, Pending and
// MarkRead take the file as it is (MarkRead marks what is left of its keys).
//
// JoinTeam and LeaveTeam rewrite config.json as an object indented by two
// spaces, every key and member other than the one changed keeping its
// value and order.
//
// # Design notes
//
// Two other programs write these files, each with its own lock, and the
// two locks do not exclude each other: the atm CLI takes an flock(2) on
// inboxes/{agent}.lock (a sidecar never replaced or removed), Claude Code
// (2.1.332) makes the directory inboxes/{agent}.json.lock with mkdir
// (EEXIST: held; older than 10 s: abandoned) and writes a temporary file
// that it renames over the inbox. So every write of this package takes
// both, always in this order, within one Config.LockTimeout (default
// 1.55 s, the total of the atm CLI's 50…800 ms backoff):
//
//  1. the flock on inboxes/{agent}.lock (github.com/gofrs/flock, which
//     takes LockFileEx on Windows), polled every 1 to 2 ms;
//  2. the inbox is created as "[]" (O_CREATE|O_EXCL) if it is missing, as
//     Claude Code does: it locks only a file that exists;
//  3. the directory inboxes/{agent}.json.lock, polled every 1 to 2 ms; one
//     older than 10 s is removed as abandoned; its modification time is
//     renewed every 5 s while held. It is removed on every way out.
//
// Both are held for the few milliseconds of the write (BenchmarkSendLocks:
// about 3 ms on a small inbox, 25–35 ms on one of 10,000 messages); Claude
// Code's writers give up after 10 retries within about 0.65 s, so only a
// stream of back-to-back writes from several processes makes its
// SendMessage give up (it says so and writes nothing; TestConcurrentProcesses's
// eight writers at full speed do that to about one SendMessage in two). A
// config.json write takes {team}/config.lock (flock) and then
// {team}/config.json.lock (directory) the same way, and replaces the file
// by a rename. No lock is taken on a file that is then renamed over.
//
// Under the locks a writer reads the inbox, finishes a write a killed
// writer left (see "The journal"), applies its change (an append is
// dropped when a message with the same ID is there), writes
// inboxes/{agent}.tmp as a new file and fsyncs it, records it in the
// journal, then exchanges it with the inbox atomically (renameat2
// RENAME_EXCHANGE on Linux, renamex_np RENAME_SWAP on macOS; a rename that
// refuses to replace when there was no inbox). The displaced file, now at
// the tmp path, is compared byte for byte with what was read. If it
// differs, a writer that took neither lock wrote in between: its messages
// that ours lacks — by ID, or by (from, timestamp instant, text) for
// id-less ones — are merged in, the result is sorted stably by timestamp
// instant (elements without one first), and the exchange is repeated. A
// displaced file that cannot be parsed even after a short wait, or that
// still brings new messages after 16 rounds, is kept aside as
// {agent}.json.unmerged-{nanos}, never deleted. Finally the tmp file is
// removed and the locks released, the directory first. Readers take no
// lock; the inbox path always names a complete file, so a reader sees the
// state before or after a write, never half of one. Only a writer that
// truncates and rewrites the file in place can be caught half way: every
// reader and writer re-reads an unparsable file for about 160 ms before
// calling it corrupt.
//
// Claude Code's reader delivers the unread entries it reads without a
// lock, then "marks them read" under its lock by writing back only the
// unread entries it did not deliver (identity from|timestamp|text):
// delivered and read entries disappear. That removal is a consumption, not
// a loss, and nothing here puts such an entry back. Without its lock, our
// exchange could land between its locked re-read and its rename, which
// then drops our message; and its SendMessage could replace a file that
// our exchange had just written. TestClaudeCodeInterop reproduces both
// losses with the flock alone and shows none with both locks.
//
// The window. No writer that takes neither lock is known any more (the
// atm CLI and Claude Code each take one). The swap-and-merge stays for any
// such writer W, which reads the whole file, changes it and writes it
// back. Against our exchange E:
//
//   - W writes entirely before our read, or reads after E: nothing to do.
//   - W writes after our read and before E: its bytes are in the displaced
//     file and are merged. Nothing is lost.
//   - W read before E and writes after E: its stale copy replaces ours, and
//     what E added is gone; nothing can tell that apart from a consumption,
//     so it stays gone.
//   - W opened the file before E and its bytes land after we read the
//     displaced file: they go into the displaced inode, which we unlink.
//
// # The journal
//
// Beside each inbox a writer keeps inboxes/{agent}.journal, read and
// written only under the inbox locks; the atm CLI and Claude Code ignore
// it, and the inbox file is byte for byte what it would be without it. It
// holds one line, the record of the last write:
//
//	{"at":"2026-03-18T20:21:33.123456789Z","file":"<hash>","messages":[{…}]}
//
// when it was written, a hash of the new inbox file the writer has just
// written and fsynced to {agent}.tmp, and the messages the write adds or
// changes as it puts them in the file (compact JSON): those Send and
// Broadcast append, those MarkRead marks (with "read": true), and those a
// merge or a replay adds. The record is replaced and fsynced after the tmp
// file and before the exchange.
//
// Every locked write — Send, Broadcast, MarkRead and Repair — first looks
// at {agent}.tmp. If it is there and its hash is the record's, the last
// writer died after recording its write and before its exchange (after an
// exchange the tmp path holds the displaced old inbox; after a finished
// write it is gone). The write is then finished: each recorded message
// that the inbox lacks is appended (merged and sorted like a merge), and
// each recorded read mark is set again on a message the inbox holds
// unread. A recorded read mark whose message is gone is not put back: it
// was consumed. In every other case the record is history, and nothing is
// restored: a message that was in the inbox and is gone was consumed.
// Read and Pending take no lock and finish nothing.
//
// Crashes: a message whose Send did not return may still be delivered by
// the next write (never twice: it is keyed by its ID), unless the writer
// died before its record was complete, or another program (the atm CLI
// uses the same tmp path) wrote first. A record cut short by a kill does
// not parse and is ignored. A crash is always safe for the inbox: the tmp
// file is fsynced before the exchange, so the inbox is the old or the new
// complete file. A writer killed inside its write leaves Claude Code's
// lock directory behind: every writer, Claude Code's included, waits until
// it is 10 s old and then takes it over.
//
// Clients remember the last parse of each inbox; when a file has only grown
// by appended elements, only the new elements are parsed, and any other
// change (Claude Code removing entries) reuses the entries whose bytes are
// unchanged. That keeps an append to an inbox of thousands of messages
// cheap.
package atmclient
