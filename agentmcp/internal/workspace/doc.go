// Package workspace gives each isolated session a place of its own to work
// in, a git worktree of the repository that holds its cwd, on its own
// branch, with a block of ports; it shows the session's change, brings it
// into the lead's checkout, and tells when two agents change one file. It
// never loses work. It runs the user's own git (the git command, arguments
// as a list, -z output parsed, exit codes checked, errors carrying git's
// stderr) and never reimplements it.
//
// # Why it is shaped so
//
// Everything that must survive a crash is in git, where git's own tools
// respect it: the lock of a live worktree is `git worktree lock --reason`
// (so `git worktree prune` and other tools leave it alone), and what we
// made is recorded in refs/atm/ (see record.go). The package keeps no
// state of its own but the machine-wide port reservations and the
// radar's (shared: in the repository's git directory; a Tracker's small
// index and watch, which a crash only costs a whole look); a Manager
// holds no lock. A later serve, `atm-agent-mcp worktrees`, or a test after
// a SIGKILL all read the same truth.
//
// Commands go through a Runner: the local one runs git and sh here; a
// host's (Config.Host: a machine reached over ssh, whose runner the
// composition root makes of sshhost.Exec) runs the same commands there.
// The file operations that are not git commands (resolving and checking a
// location for symbolic links, copying .worktreeinclude files, copying
// the index for a snapshot and installing it, the info/exclude lines, the
// takeover lock, the writable roots' directories) go through one small
// interface (files.go): this machine's os calls, or, on a host, one fixed
// POSIX sh program each, run there through the same Runner (files_sh.go:
// test, mkdir, cat, cp, ln, mv, mktemp; the lock is flock(1), the same
// flock(2) lock as this machine's, held by a program that waits for its
// stdin's end). Why so, and not a file protocol of our own or a
// filesystem interface the host implements: a host then needs nothing
// but a way to run a command (ssh), every operation is the same program
// whatever the transport, and the programs are tested on this machine
// (TestShFiles answers as the os calls do, on the same files) and on a
// host whose paths do not exist here (TestOnAHost), so that a file
// operation that escaped the interface fails. On a host the parts that
// read this machine's files directly are off: a Tracker reads whole
// snapshots (inotify does not reach over ssh), the radar keeps a host's
// state in memory (package places), and ports are reserved on the host
// by sh programs (ports_host.go). An owner is always this machine's
// process (serve), so a lock's owner is judged here as for a local
// worktree.
//
// # Where worktrees go, and their branches
//
// An agent's worktree is <checkout root>/.atm/worktrees/<name> on the
// branch atm/<name>, where name is the session's identity (made safe for a
// ref and a file name), then name-2, name-3… when that branch, directory
// or record exists (a kept worktree of an earlier session of the same
// identity, another serve's, a branch of the user's): a name is taken by
// creating its record ref with update-ref's "must not exist" old value, so
// two serves never take one. Why there:
//
//   - inside the repository, on its file system, next to the code, as
//     Claude Code puts its own (.claude/worktrees/<name>, worktree-<name>):
//     users find them, and a worktree is quick to make;
//   - a dot folder, which go ./..., ripgrep and most file watchers skip;
//     `git clean -fdx` of the lead's checkout does not descend into it
//     (nested repositories are skipped without -ff);
//   - kept out of the user's `git status` by the lines /.atm/worktrees/
//     and /.atm/checks/ in the repository's info/exclude (the common git
//     directory, shared by every worktree), never by editing their
//     .gitignore;
//   - one branch prefix, atm/, so that an agent's sandbox can be given
//     exactly the refs it needs (see WritableRoots) and a user sees at once
//     which branches are agents'.
//
// A location that is, or passes through, a symbolic link is refused (a
// committed link could send the worktrees anywhere), as Claude Code refuses
// a linked .claude/worktrees. The base is the checkout's HEAD unless a ref
// is given; the base commit is recorded, and the branch has no upstream.
// A cwd below the checkout's root maps to the same place below the
// worktree.
//
// # Owning, keeping, never losing
//
// While a session lives its worktree is locked, the reason naming its
// agent_id and the owning serve (pid, process start time, host). List
// reports each worktree we made as live (the owner runs), orphaned (the
// owner is gone: after a SIGKILL; resumable, not foreign) or kept
// (unlocked), with whether it is dirty and how many commits it is ahead.
// A pid that exists but started at another time is a reused pid: its owner
// is gone. An owner on another host is never judged from here.
//
// Release at agent_close removes a worktree only when it holds no change
// against its base (no commit, nothing uncommitted, nothing untracked;
// ignored files such as .worktreeinclude copies do not count), with its
// branch (compare-and-swap on its tip) and record; `git worktree remove`
// without --force checks again and refuses a dirty one. Any other is
// unlocked and kept, and the result gives its branch, path and diff stat.
// Prune removes only clean worktrees that nobody owns and says what it kept
// and why. A worktree that is not ours (no record) is never touched.
// Reenter (resume) takes a worktree over when its owner is gone, under an
// flock in the worktree's admin directory (git's lock is not atomic), and
// refuses one held by a live process.
//
// # New worktrees: .worktreeinclude, setup, ports
//
// .worktreeinclude is Claude Code's file, in its syntax (gitignore's), so
// users reuse theirs: the files it names that git ignores in the lead's
// checkout are copied in (git matches them: `ls-files --others --ignored
// --exclude-from`, then `check-ignore --stdin`); a tracked or not-ignored
// file, a symbolic link, or a file already there is never copied. The
// setup command (sh -c, in the new worktree, with ATM_WORKTREE, ATM_BRANCH,
// ATM_PORT_BASE, ATM_PORT_COUNT and ATM_SOURCE) runs before the worktree is
// handed out; its output's tail is kept, and when it fails everything made
// is removed. On a host the setup and the checks run there, in the
// worktree there. Ports are machine-wide blocks (ports.go): every serve of
// every user reserves in one directory made like /tmp (sticky,
// world-writable), under an flock, each block by a record file of its
// own (so that a user removes only their own), bind-probed, released at
// Release, and free again once their owner is gone; nothing there is
// followed or written through a symbolic link. On a host they are the
// host's blocks, in the same directory and format there (ports_host.go),
// not bind-probed.
//
// # Review and merge
//
// A session's change is its worktree's snapshot (snapshot.go: the tree
// `git add -A` would make, through a copy of the index, so the agent's
// index is never touched) against its base: committed, staged, unstaged
// and untracked together. The base is the recorded one; after a merge the
// merged commit; and when the agent has taken the lead's newer work in
// (merged or rebased), the newest commit it shares with the lead.
//
// Merge computes the result with `git merge-tree --write-tree`, without a
// checkout, from that base (git 2.39 has no --merge-base: the lead's side
// is given as a commit of its tree on the base). Strategies: squash (one
// commit, the agent as author, an Agent-Id trailer), merge, rebase. A
// conflict, a failing check (run in a temporary worktree at the result) or
// a refusal (the lead's checkout dirty, detached or mid-operation, nothing
// to merge) changes nothing anywhere. Only then does the agent's branch
// take its uncommitted work and does the lead's checkout move: its files
// and index by git's two-way merge (`read-tree -m -u old new`, which
// refuses rather than overwrite a local change or an untracked file, and
// never writes MERGE_HEAD or a conflict marker), then its branch by
// `update-ref <branch> new old` (compare-and-swap); if the lead committed
// meanwhile the files go back and the merge reports ErrLeadMoved. (`git
// merge --ff-only <result>` updates the files as safely, measured, but
// moves whichever branch HEAD names by then, checked only against what it
// read itself; read-tree and update-ref name the branch and the commit the
// result was computed on.) No hook of the lead's runs.
//
// # The radar
//
// On each ended turn a session's change (paths and old-side line ranges,
// as Manager.Changes gives it) is given to a Radar, which compares it in
// memory with the other live worktrees of the repository: same lines
// (ranges that intersect or touch, where git's merge conflicts: checked
// against merge-tree in the tests), same file on other lines, or a
// rename. Each pair and file is told once (and once more if other lines
// become the same lines). A shared Radar (serve's) keeps each
// repository's agents and what was told in the repository's common git
// directory (atm/radar.json under an flock of atm/radar.lock,
// radarstore.go), so that the agents of every serve working on the
// repository are compared and an overlap is told once, by whichever
// serve sees it first; an agent whose serve is gone is dropped by the
// next reader.
//
// A whole change costs a snapshot (`git add -A` of the worktree through a
// copy of its index: tens of milliseconds in a 10,000-file repository).
// A Tracker (track.go) keeps one worktree's change and, where inotify
// tells what changed (treewatch_linux.go), reads only that: no git when
// nothing changed, one `git diff <base>` over the change's paths through
// a small index of its own when files of the change were edited, one
// `update-index` more when a file was first touched (asked first of a
// long-lived `git check-ignore`, ignore.go). New files alone are read by
// the tracker itself where git would say the same of them (no deletion or
// rename in play, no attributes: track_new.go), so a turn that only adds
// files costs no git. A moved ref has git tell the base again
// (usually one merge-base); anything it cannot tell (lost events, a
// folder moved away, a .gitignore changed, a new base) is a whole look,
// and so is every look on a host.
//
// # Agents that commit: Codex's sandbox
//
// Measured with the pinned Codex CLIs, 0.171.0 (app-server) and 0.153.4
// (mcp-server), each through codex exec (TestCodexCommitsInWorktree; first
// with 0.169.0), sandbox_mode "workspace-write", cwd the worktree: `git add && git commit` fails with "Unable to create
// '<common>/worktrees/<name>/index.lock': Read-only file system" (Codex
// makes read-only the git directory that a writable root's .git file
// points to). The narrowest sandbox_workspace_write.writable_roots that
// lets it commit on its branch is what WritableRoots returns: the
// worktree's git directory (an explicit writable root overrides Codex's
// protection), <common>/objects, <common>/refs/heads/atm and
// <common>/logs/refs/heads/atm; each of the four is needed (without
// objects: "unable to create temporary file"; without refs/heads/atm:
// "cannot lock ref"; without logs/refs/heads/atm: "unable to append to
// logs/refs/heads/atm/<name>"). With them the agent can commit, merge and
// rebase on its branch, and create or move branches under atm/ (other
// agents' too: a sandbox root is a directory), but not delete one;
// it cannot touch the repository's config or hooks (whose code the lead's
// own git runs outside any sandbox), packed-refs, other branches, tags,
// refs/atm records, or the lead's index and HEAD. git stash fails
// (refs/stash). Deleting a ref needs packed-refs.lock in the common
// directory, which only the whole common directory would allow (hooks
// included): so a rebase prints "Unable to create packed-refs.lock" for
// each pseudo-ref it cleans up but completes, and can leave a stale
// CHERRY_PICK_HEAD or REBASE_HEAD (0.171.0 and 0.153.4: CHERRY_PICK_HEAD,
// after which a `git merge` refuses, "You have not concluded your
// cherry-pick", until the agent removes the file from its git directory);
// `git merge` of the new base has no such noise. TestCodexCommitsInWorktree proves the set with the real Codex.
//
// # Locks
//
// A Manager holds no mutex. Ports has one mutex, taken before the flock of
// ports.lock (an flock excludes other open files, not goroutines sharing
// one; on a host, held around a whole reservation, whose program takes
// the flock there); each reservation's record is made with O_EXCL
// (noclobber there) and removed by its user, never locked itself. Reenter
// takes the flock of <worktree admin dir>/atm-owner.lock around reading
// and retaking git's lock. A Radar has one mutex, taken before the flock
// of a repository's atm/radar.lock (shared), held while it reads, compares
// in memory and writes one repository's state. A Tracker has one mutex,
// held for a whole look (its git commands run under it); it takes no
// other. git's own locks (index.lock, ref locks) are git's.
//
// # Wiring
//
// session does not import this package: it is given, at creation, a small
// interface its Config declares (session.Places: Place, Release,
// TurnEnded), which package places implements over a *Manager per host
// (the composition root, proxy, builds this machine's with the user's git
// and a Ports of SharedPortsDir, or of $ATM_PORTS_DIR, and each host's
// with that host's runner and ports). Place creates or re-enters (resume) a worktree;
// Place.Env() is what the agent's commands get, and WritableRoots what a
// Codex thread's sandbox gets; Release lets go of it or removes it when it
// holds no change. places keeps a Tracker per live place and a shared
// Radar: when a turn ends it gives the Tracker's Changes to the Radar on a
// goroutine of its own, and mails the overlaps; the worktrees command
// calls List and Prune. Diff, Head and Merge are agent_diff's and
// agent_merge's git side, through places.Places (Diff, DiffCheckout, Head,
// Merge), which also mails what a merge tells.
package workspace
