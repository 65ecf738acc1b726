// Package places gives the sessions started with isolation "worktree" their
// working place: it is session.Places over package workspace (the worktree
// of an agent: its branch, lock, .worktreeinclude, setup command, ports)
// and runs the conflict radar, which mails two agents that change one file,
// and the lead, once per pair and file.
//
// session and workspace do not know each other (agentmcp/layers_test.go);
// this package is the adapter the composition root (proxy) gives the
// session manager, and what the tools ask about overlaps. It maps
// workspace's errors to the client's: a cwd outside a git repository, a
// repository without a commit, an unknown base are the caller's to fix
// (INVALID_PARAMS); a failed setup command and a worktree held by another
// live serve are INVALID_SESSION_PARAMS with what happened; nothing is
// left behind by a refusal (workspace.Create removes what it made).
//
// A resume re-enters the session's recorded worktree (workspace.Reenter:
// a lock whose serve is gone is taken over; one a live serve holds is
// refused). When the worktree is gone (its close removed it because it
// held no change, or someone deleted it), a new one is made from the
// checkout it came from, and the place says so (session.Place.Note).
//
// # Hosts
//
// A session on a host (session.PlaceRequest.Host) gets its place there:
// Config.Hosts gives each host's workspace.Manager (whose git and file
// operations run there, over the host's connection; the composition
// root makes it at first use and keeps it), and every call about a place
// (Place, Release, Diff, Merge, the radar's looks) picks the manager by
// the place's host, so a worktree, its review and its merge are made in
// the repository there, and the lead's checkout that a merge moves is
// the one there. A host's radar is shared through the repository's git
// directory there, as this machine's is here (workspace.NewSharedRadarOn:
// the host's lock and files, over its connection), so the agents of every
// serve working in a repository there are compared, whichever machine
// each serve runs on; its repositories are keyed by their paths there
// (the same path here, or on another host, is another repository). A look
// there costs three more commands over the connection (the lock, held
// across the compare; the read; the write when something changed), after
// the whole read of the worktree's change there, in the radar's own
// goroutine once the turn has ended. The mail after a merge goes to the
// other agents in the same repository on the same host.
//
// # The radar
//
// When a turn of an isolated session ends (session.Places.TurnEnded, on the
// session's job goroutine, after the turn's answer), the session is queued,
// never waited for. One goroutine of the radar's own reads the change of
// each queued worktree (its workspace.Tracker, one per live place: paths
// and line ranges against its base, committed or not, reading only what
// changed since its last look), gives it to a shared workspace.Radar, and
// mails, for each overlap not told yet, both agents and their leads
// through the ATM client, as atm_send does (audited as atm_send), from the
// serve's own identity. The radar's state is the repository's (its git
// directory): the agents of another serve on the same repository are
// compared too, introduced by their serve (identity, branch, ATM team,
// lead), and an overlap is told once, by whichever serve sees it first;
// each agent is mailed in its own team, and each lead gets one copy. A
// look is bounded by lookTimeout (5 s): a turn's overlaps are told within
// it of the turn's end (the queue is drained at once, in no timed batch),
// or logged as unread. A worktree re-entered by a resume is read once,
// quietly: what overlapped before the restart is not told again. The
// goroutine is started by Start and ended (and joined) by Close; a turn
// that ends after Close is not looked at.
//
// # Review and merge
//
// Diff and Merge are agent_diff's and agent_merge's git side
// (workspace.Manager.Diff and Merge over the session's place, which the
// tools rebuild from the registry record for a closed session whose
// worktree was kept). A merge's refusals become the client's errors
// (INVALID_SESSION_PARAMS with a reason: lead_dirty, lead_busy,
// nothing_to_merge, lead_moved, no_worktree), each saying that nothing
// changed; a conflict and a failing check come back as they are, for the
// tool to report as outcomes. After a merge into the lead's branch every
// other live isolated agent of the repository gets one mail that its base
// moved, with the stat, and the merged worktree is read again by the
// radar, quietly. MailConflict tells an agent which files of its branch do
// not merge and to bring the branch up to date. Mail goes out as the
// radar's does (the ATM client, from the serve's identity, audited as
// atm_send).
//
// # Locks
//
// Places.mu guards the live places' identities, their trackers, the
// radar's queue and the hosts' radars; it is a leaf, held around nothing but map operations
// (a tracker is closed after it is let go). workspace.Tracker and
// workspace.Radar have their own (see workspace's lock inventory).
package places
