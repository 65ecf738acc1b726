// Package registry keeps the proxy's durable state under
// {home}/.config/atm/agent-sessions/{team}/: the per-instance session
// registry, cross-process identity claims, session summaries and the team's
// audit log.
//
// Layout of a team directory (see [TeamDir]):
//
//	{team}/audit.jsonl                         audit log, one JSON object per line
//	{team}/{identity}.lock                     identity claim (a lock), never replaced
//	{team}/{identity}.holder                   who holds the claim (pid, agent, since)
//	{team}/{instance}/registry.json            registry of one proxy instance
//	{team}/{identity}/{backend_id}/summary.md  saved summary of one session's thread
//
// A proxy opens its registry with [Open], which claims the instance identity,
// loads the file and marks the sessions of the previous process stale; for
// a team that may be a typo, [Config.Deferred] (and [AuditConfig.Deferred])
// postpone all of that, and every file and directory, to the first session
// recorded. Each
// change ([Registry.Add], [Registry.Update], [Registry.CloseSession],
// [Registry.Finish], [Registry.Remove], [Registry.Prune]) claims or releases the session's
// identity as its status requires and persists the whole file before it
// returns. The CLI reads every instance registry of a team with
// [Dir.Scan], who holds a claim with [Dir.Holder], and whether that holder
// still runs with [Dir.Owner]; none of them takes a lock or writes
// anything. Scan shows the live sessions of an instance whose proxy no
// longer runs as stale at once, as its next Open would mark them. [Registry.Adopt]
// moves the sessions of an ended instance into an open one (a directory
// whose instances change from run to run, as Claude Code session teams'
// do), under that instance's claim; [Registry.AdoptHandedTo] moves only
// the sessions an ended proxy handed over to a Claude Code session
// ([Session.HandedTo]: its conversation moved to that session).
//
// # Design notes
//
// Concurrency. A Registry has one mutex. Every method takes it, and a change
// is applied, persisted and (on failure) rolled back while it is held, so the
// file on disk always matches a state the in-memory registry was in and two
// persists never race. Only one process writes a registry file: the one
// holding the instance identity's lock, so no file lock is taken around the
// writes themselves. The instance claim of a Deferred registry is taken
// under the mutex by the first [Registry.Add] or [Registry.Adopt], as a
// session's claim is: without waiting (a rival holder is a conflict), so
// no lock is ever waited for while the mutex is held.
//
// Identity claims. An identity is bound by holding an exclusive lock
// (github.com/gofrs/flock: flock(2) on Unix, LockFileEx on Windows) on
// {team}/{identity}.lock for as long as it is bound. The system drops the
// lock when the holder exits however it dies, so a crashed proxy frees its
// identities at once and nobody guesses from PIDs. The lock file is never
// renamed or deleted, because a lock on a replaced file would protect
// nothing. The pid, agent_id and time in {identity}.holder are diagnostics
// (written after the lock is taken, removed on release): a lock on
// Windows is mandatory, so a rival could not read them in the lock file.
// Claims are decided by the lock alone; a reader that must not take the
// lock (a listing beside running proxies) asks [Dir.Owner] whether the
// holder file's pid still runs and, on Linux, has the lock file open
// (/proc/{pid}/fd), so that neither a zombie nor a reused pid passes for
// the holder. Two claims of one identity
// conflict even inside one process (flock locks belong to open file
// descriptions); a Registry lets a session bind its own instance identity by
// sharing the instance's claim.
//
// Crash safety. Files are replaced by writing a dot-prefixed temporary file in
// the same directory, fsyncing it, renaming it over the target and fsyncing
// the directory. A crash at any moment leaves either the old or the new file
// in place, never a mix. What a crash can leave behind: a pending
// ".registry.json.*.tmp" file (removed by the next Open of that registry),
// lock files holding the dead process's diagnostics (harmless: the lock is
// free), and sessions that claim to be busy or idle (read as stale by Scan
// at once, and marked stale by the next Open). An audit entry is appended with one write call, so a crash loses at
// most the entry being written and concurrent proxies never interleave lines.
//
// Errors. [ErrIdentityConflict] (wrapped by [*ConflictError]) becomes the
// proxy's -32001 IDENTITY_CONFLICT and [ErrSessionNotFound] its -32002
// SESSION_NOT_FOUND.
package registry
