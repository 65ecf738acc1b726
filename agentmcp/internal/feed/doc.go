// Package feed is what a serve publishes about itself for a live view of
// its team (atm-agent-mcp view and status, package view): a snapshot of
// every agent session it runs and a stream of their state changes, the
// team's mail as it is written, and a way back for answers to pending
// approvals.
//
// # What it publishes
//
// Per session ([Agent]): identity, kind, model, role, cwd and branch; a
// state from the protocol events the serve already has (working, waiting
// for an approval, waiting for mail, idle, failed, closed) and since when;
// the current item (the command it runs, the file it edits, the tool it
// calls, or "thinking" while the model works between items) and since
// when; turns, with the spans of the recent ones; the token usage in the
// one shape of every kind (backend.Usage); unread mail; pending
// approvals; recent events and messages; the last result; and Codex's own
// sub-agents, nested under their parent from the collab items (not team
// members); its token budget and its use; for an isolated agent, its
// worktree, branch and the diff stat of its change, read off the
// publisher's path (diff.go), and on a view's request the change itself.
// Per team: every mail between members ([Mail]: who to whom, when, the
// summary), read from the team's inboxes as written.
//
// # Why it is shaped so
//
// A serve learns every state change as a protocol event (a turn started,
// an item began, an approval was asked, a turn ended): the session layer
// tells the feed so through its one hook (session.Observer), and the feed
// reads the session's State then. Nothing is guessed from a terminal or
// polled from registry files, which is where tools that scrape agents go
// wrong (an agent "never ready" because its screen did not match). The
// hook never blocks the reader that calls it: it marks the session dirty
// and wakes the publisher, which coalesces a burst of events into one
// state per agent at most every Config.Coalesce and sends only what
// changed.
//
// The feed is a Unix socket, not a port: the socket file (0600, in a
// directory of its own, 0700) admits the user who runs serve and nobody
// else, with no token to hand around and no port to pick or collide on.
// Its path is in the instance directory of the serve's registry
// ({team}/{instance}/feed.json, [Record]), where a view finds every serve
// of a team without asking any of them; a record whose socket refuses is
// a serve that is gone, and a stream that ends is a serve that just
// exited, so a view marks its agents gone at once instead of waiting for
// a timeout. The socket itself lives under the system's temporary
// directory because a socket path is limited to about 100 bytes, and an
// ATM home may be deeper than that.
//
// The protocol is one JSON object a line, both ways ([Frame]). A client
// gets a hello (the serve: instance, team, pid, since when), a snapshot
// (every agent, the recent mail), then one frame per change: the whole
// [Agent] whose state changed (small, and a client never has to merge
// partial updates), or a [Mail]. A client too slow to keep up is
// disconnected rather than waited for (its queue holds Config.ClientQueue
// frames): it reconnects and starts from a fresh snapshot, so a slow view
// never holds a serve back.
//
// An answer to an approval sent back on the stream ({"type":"answer"})
// enters the same queue agent_respond answers (Session.RespondFrom): the
// first answer wins, from whichever path (the client's elicitation,
// input_required, agent_respond, the view); the others are withdrawn, an
// approval already answered says so, and the audit records where the
// answer came from. The default-deny timeout is unchanged.
//
// # Goroutines and locks
//
// A Feed runs one publisher goroutine, one inbox poller, one accept loop,
// one reader of the isolated agents' diff stats (diff.go) and, per client,
// one reader and one writer, and one goroutine per diff a client asks
// for. A new client's snapshot is taken after a publish of what changed
// since the last one, so it is never behind the sessions. Feed.mu guards
// the dirty set, the published agents, the mail ring, the client set and
// the diff stats with their queue; it is never held across I/O or a call
// into a session (Session.State takes the session's lock; the feed takes
// its own only after). Feed.pubMu makes
// publishes one at a time (the publisher's, a new client's, the last one
// at Close) and is taken before Feed.mu. client.mu guards a client's
// closed flag and queue; it is taken after Feed.mu.
package feed
