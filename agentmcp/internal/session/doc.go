// Package session is the proxy's domain: the agent sessions of one proxy,
// of every agent kind, their queues of turns, the turns themselves, their
// persistence in the instance registry, their approvals and what their
// events told. It knows nothing about MCP: the client is reached only
// through the small interfaces Sink (events), Asker (approvals), CallRef
// (the request that started a turn) and Mail (the mail layer), which the
// composition root implements. Observer (observe.go) is told of every change of a session
// without blocking, and reads Session.State later: package feed publishes
// the states for a live view through it.
//
// # Tokens, cost and budgets
//
// A session's token usage (the one shape of every kind,
// backend.Usage) is kept in its registry record, so that it counts
// over resumes in later serves and a team's total can add up closed
// sessions and other serves' (usagesaved.go). Its cost comes from the
// configured price of its model, else from what its agent reports, else
// there is none (price.go). Token budgets, a session's and the team's,
// tell the lead at 80 % and at 100 %, then hold back new turns (and
// auto-mail) until raised (budget.go); the budget watcher is one goroutine
// of the Manager, woken by each usage report.
//
// # Agent kinds
//
// It names no agent kind. The composition root (package proxy, from
// serve's configuration) builds one backend per kind and gives them in a
// map by kind (Config.Backends): serve's supervisor of the Codex child
// under the default kind (registry.DefaultKind), one ACP backend per
// configured agent under its name. Each talks through the seam package
// codexchild/backend, the only agent package this one imports. A
// session's record names its kind; the Catalogue (agents.go) picks its
// backend by that name, lists the kinds, gives a new session's settings
// and checks them, and everything a kind does differently is asked of its
// backend as a capability (backend.Sandboxed, Configurable,
// WholeRestarter, Named, Availability, MailPauser, Steerer, Forker,
// StructuredOutputter), so that a new protocol is a new entry in the map
// and nothing here changes. What a kind cannot do has one fallback for
// every kind: input for a busy turn is queued as a turn of its own
// (steer.go), a fork is told its source's summary or messages (fork.go),
// and an answer to an output schema is asked for in the prompt; every
// answer is checked against its schema here, the same way (output.go).
//
// # Hosts
//
// A session may run its agent on another machine, a host reached by the
// composition root over ssh (hosts.go): Config.Hosts gives each by name
// as a small interface (Host: its backend of a kind, its directories,
// its git facts), and CreateRequest.Host puts a session there, recorded
// in registry.Session.Host. The backend of a session is picked by the
// pair its record holds, (kind, host): the kind's entry of the host, or
// of this machine without one. Why a pair, and not a key of its own or
// another map of kinds: the domain stays kind-neutral and host-neutral.
// A host is a name here, as a kind is; neither is branched on; the
// catalogue of kinds (their names, settings, capabilities) is the same
// wherever they run, so it stays the kinds' map, and a host only says
// where a kind's backend is. The record holds both, so a session adopted
// after a restart runs on its host again, its thread being there. A host
// down is that backend's availability (backend.Availability,
// MailPauser), asked as for any kind: its turns and new sessions are
// refused at once and its mail waits, while the same kind here runs on.
// The session's cwd is a path there (Catalogue.ResolveCwd: relative to the
// host's root), its git facts are asked of the host (its own git), and
// the context block names the host. An isolated session's place is made
// on its host (PlaceRequest.Host, Place.Host): the Places implementation
// keeps one workspace per host, so nothing here changes with where a
// place is.
//
// # States and the queue
//
// A session is busy while a turn runs and idle otherwise; closing it makes
// it closed (or interrupted, when a turn was running), and Manager.Rebind
// makes a finished session idle again (resume); closed again before it ran
// a turn, it gets back its status without a summary turn.
// Manager.HandOver gives every live session to the proxy of another
// Claude Code session (stale, HandedTo set, no summary: the thread goes
// on there), which adds them with Manager.Take and binds them with Rebind.
//
// # The record first, the thread kept
//
// What the registry says about a session comes before anything slow: its
// thread id is recorded as soon as the backend names it (during a long
// first turn), and a close (agent_close, shutdown) writes the final record
// with the session's facts (thread, turns, last result) before it
// interrupts the turn or asks for a summary, so that a proxy killed
// half a second after its stop began (Claude Code's SIGKILL) leaves
// nothing live behind. A resume continues the agent's own thread where the
// backend can; the summary, else the last result, only seeds a new thread
// where it cannot, and the turn's result says which (continuity.go). Each session runs one turn at a time (FR-8.9 in
// docs/requirements.md): Claude's turns wait in FIFO order and always go
// before auto-mail, which starts only on an idle session with nothing
// queued. A turn's result is handed back only
// after the session has moved on (idle, or its next turn started), so a
// client never sees an answer before the state it implies.
//
// # Places
//
// A session started with isolation "worktree" works in a place of its own
// (place.go): a git worktree with its own branch and ports, made by
// Config.Places (package workspace, through the composition root's
// adapter: this package never imports it) before anything is recorded,
// named in the registry record so that a resume re-enters it, let go of
// at a shutdown or a hand-over, and released at agent_close (removed only
// when it holds no change). Every turn of such a session runs in it: the
// thread's cwd, its environment (ThreadParams.Env), the writable roots a
// sandboxed agent needs to commit (never for a read-only thread), and the
// <session-context> block that names the worktree, branch and ports. Each
// ended turn is told to Places (TurnEnded, the conflict radar), after the
// turn's answer and without waiting.
//
// # The fast path, from this side
//
// A turn that a client request started may run on the goroutine that read
// the request (Session.Run on an idle session). Before anything that may
// wait it calls CallRef.Release, and with the backend's OnResult hook its
// result may be answered from the backend's reader (CallRef.TryReplyNow, which
// calls back to record the turn just before the answer is written). The
// package never sees how either works.
//
// # Locks
//
// The order is Manager.mu → Session.mu → persister.mu; nothing calls out
// (I/O, the backend, the sink, the asker, the mail layer) while holding one.
//
//   - Manager.mu guards the session maps, the identities being claimed
//     and the shutting-down flag.
//     Create and Rebind reserve the identity under it, drop it for the
//     registry write and the git walk, then take it again to commit or
//     undo.
//   - Session.mu guards the session's fields; only Session methods (and the
//     Manager's, for a session it is creating or closing) take it.
//   - persister.mu guards the persister's queue.
//   - budgetWatch.mu guards what the lead was told of the budgets and the
//     team's budget as last read; a leaf.
//   - Handle.mu guards a started turn's cancel function; a leaf, taken
//     with no other lock held.
//   - resumedSet.mu guards the resumed sessions that have run no turn yet
//     (Manager.resumed); a leaf.
//   - Absent.mu guards the discarded sessions remembered (discarded.go);
//     a leaf.
//
// # When an agent is down
//
// A backend that can be down for a while tells so (backend.Availability,
// see recovery.go): Create and every turn a client asks for (Run,
// RunBackground, Start, AnonymousReply) then refuse at once, before any
// registry write or audit entry, and the error says how to get the agent
// back. Errors about a dead child carry its supervisor's advice
// (backend.RecoveryError), so that none advises an action the supervisor
// will refuse; only the session's own backend is asked, so another kind's
// crash never holds a session. An auto-mail turn's mail counts as
// delivered once the agent has acknowledged the turn (Turn.OnAccepted;
// see TryMail): a child that dies before that leaves it unread, offered
// again after the restart.
//
// # Goroutines
//
// The Manager owns the persister (one goroutine writing the registry), the
// budget watcher (budget.go), one goroutine per running job (or the caller's, for a turn started inline)
// and one per pending approval (plus one asking the client). Manager.Stop
// ends them; Manager.Wait waits for the jobs.
package session
