// Package proxy is the composition root of `atm-agent-mcp serve`: it builds
// the parts and wires them together, and owns their lifetimes.
//
//   - mcpconn: the MCP connection to Claude (framing, read order, the fast
//     path, server→client requests, events);
//   - tools: the 19 tools, over the session manager, the ATM client and the
//     connection;
//   - session: the agent sessions of every kind, their turns, persistence
//     and approvals;
//   - the agent kinds' backends, behind the seam codexchild/backend: one
//     per kind, in the map by kind New gives the session manager
//     (session.Config.Backends). The Codex child (codexchild, Options.Backend)
//     is the default kind's (registry.DefaultKind), under this package's
//     supervisor (child.go: restarts, crash loops, its errors in Codex's
//     words, codexerrors.go); each configured ACP agent
//     (codexchild/acpbackend, Options.Agents) is its own kind's, under its
//     name. serve (agentmcp's serve.go and agents.go) builds them from the
//     configuration; a new kind is a new entry, and the sessions ask each
//     backend what it can do;
//   - mailbridge: team mail turned into turns of idle sessions, or steered
//     into a busy session's running turn where busy_mail says so and its
//     backend can (mail.go: mailTarget.Deliver, session.TrySteerMail);
//   - feed: what the serve publishes for a live view of its team (the
//     sessions' states, the team's mail, approvals answered back), the
//     session manager's Observer, started before the first request is
//     read and closed after the sessions (their closed states go out
//     first); none for a team that may be a typo (nothing is written
//     under ATM_HOME for it);
//   - gitctx, registry, atmclient: git facts, the session registry and audit
//     log, the ATM inboxes;
//   - places over workspace: the worktrees, ports and conflict radar of the
//     agents started with isolation "worktree" (places.go builds it over
//     the user's git; the session manager gets it as its session.Places,
//     the tools for agent_status's overlaps);
//   - the hosts (hosts.go, Options.Hosts): machines other than this one
//     where agents run, each one supervised ssh master connection
//     (codexchild/sshhost) that Run makes and shutdown closes after the
//     agents (which stops what they left there), and per kind a
//     hostBackend (hostbackend.go) around the kind's own backend started
//     there: the host's availability (turns and new sessions refused at
//     once while it is away, its mail paused), a turn cut by a drop in
//     the host's words (what ssh said), and a new Codex child after one
//     died; each host is a session.Host (its backends, directories, and
//     git facts from git there, gitctx.Remote), and a goroutine per host
//     follows its connection: once it is back, the sessions of a new
//     child continue on it (AfterRestart) and the mail that waited is
//     delivered (resumeMail). A host's worktrees are a workspace.Manager
//     of its own (hostworkspace.go: git, sh and ports there through
//     sshhost.Exec), made at first use and given to places by the host's
//     name; after each turn there its reverse forwards are checked and
//     made again when gone (hostPlace.checkForwards).
//
// The adapters between them live here: eventSink (session.Sink onto the
// connection's events and progress), asker (session.Asker onto elicitation),
// mailHooks and mailTarget (session.Mail and mailbridge.Target), frames
// (mailbridge's OnFrame and the end of mail turns), teamHooks (the
// session.Mail the sessions see: team membership in config.json around
// mailHooks), leadPush (a mailbridge.MessageTarget: mail for the client's
// own identity pushed into the Claude Code session through ccmsg),
// teamStamp (the registry view of a Claude Code session team), the
// handler that passes what the connection does not answer itself to the
// Codex child (codexchild.Passthrough) and serves the sessions as MCP
// resources (resources.go, through tools), resourceNotes (resources.go: a
// goroutine, kicked by the session manager's Changed through a 1-buffered
// channel, that tells the client when the resources' URIs change; no
// lock), configWarned (configwarn.go: the configuration's warnings carried
// by the first tool error, once; an atomic flag, no lock) and noticed
// (notice.go: Options.Notices, such as an identity that moved to
// team-lead-2, carried by the first tool result, once, and by the
// instructions; an atomic flag, no lock).
//
// RunStandby (standby.go) is the other server serve may run: a connection
// that claims nothing and starts nothing, lists the tools or none, and
// answers every call with why it stands by (inside one of serve's own
// agents; under Claude Code, an identity another serve holds). It has no
// locks of its own.
//
// # Claude Code's dialect
//
// Serve's agents, of every kind, are teammates of Claude Code's agent
// teams, so they answer
// its protocol frames as native teammates do (frames.go). The mail bridge
// hands over every frame found in a bound inbox; a shutdown_request to an
// agent closes its session as agent_close does (a busy turn is
// interrupted first, then a summary is asked for; the identity is
// released; audited) on a goroutine of its own, and then answers with a
// shutdown_response (approve: true, its request_id) from the agent's
// identity to the requester through the ATM client, so both inbox locks
// apply. Meanwhile the identity takes no mail turn. A request is handled
// once: the same request_id again is neither closed nor answered twice.
// plan_approval_request, permission_request and every other frame are
// logged at info and audited as frame:<type>; idle notifications and
// shutdown responses for an agent are logged at debug; the bridge marks
// them all read, and no agent ever sees a frame. Frames in the inbox
// of serve's own identity (the lead's, bound with BindTarget while no
// session holds it) are only logged at debug and stay unread for Claude
// Code's own reader. When a mail turn
// ends (session.TryMailThen), every sender of its mail but the agent itself
// gets an idle_notification: idleReason available with the turn's result,
// interrupted, or failed with the error, written without a summary beside
// it, so that Claude Code's lead shows "Teammate @codex1 finished". Serve's
// own client, the lead, hears it instead through the messaging socket
// while its mail goes there (leadpush.go), as text in the agent's
// cross-session envelope ("Message from @codex1: Finished its turn: …"),
// after the agent's own mail; Claude Code takes no frame through the
// socket. Turns the client started (codex, codex-reply) notify nobody: the
// client has their result.
//
// Mail for the lead goes through the socket in the sender's cross-session
// envelope too (ccmsg.Envelope): Claude Code's terminal shows it as a
// teammate's message, without the peer warning it adds for its model.
// Every line is paced under Claude Code's gate for peer messages, which
// drops the lines it refuses without a word (leadgate.go): several mails
// of a sender go into one line when its tokens or the queue's room are
// short, a repeat is marked, and what does not fit stays unread.
//
// # Locks
//
// The proxy's own packages have twenty-nine locks, each documented where
// it is declared:
//
//   - mcpconn (3): Conn.mu (its reader pool shares it), and the outbox's
//     omu → emu;
//   - session (7): Manager.mu → Session.mu → persister.mu, and the leaves
//     Handle.mu (a started turn's cancel), resumedSet.mu (the resumed
//     sessions that have run no turn), budgetWatch.mu (what the lead
//     was told of the budgets) and Absent.mu (the discarded sessions
//     remembered);
//   - tools (2): roundTrips.mu (the requestStates of round trips) and
//     taskStore.mu (the MCP tasks of the connection), leaves;
//   - proxy (9): codex.mu (child.go, restart.go: the crashes, the
//     restarts and the restart in progress), frames.mu (frames.go: the
//     shutdown requests handled and the identities being shut down),
//     teamHooks.mu (team.go: the members it added), leadPush.mu
//     (leadpush.go: its binding, counters and flush signal), gate.mu
//     (leadgate.go: the mirror of Claude Code's gate), owned.mu
//     (owned.go: whether a set of goroutines still takes new ones; the
//     notifications passed on to Codex, the lead's pushes), hostBackend.mu
//     (hostbackend.go: the current backend of a kind on a host; a new
//     one is made and the old one closed outside it), hostPlace.homeMu
//     (hosts.go: the home directory on a host, held across the one `pwd`
//     there that asks it, once) and hostPlace.wsMu (hostworkspace.go: the
//     worktrees of a host, held across the one `git version` there that
//     makes them), each a leaf that guards its own fields and is held
//     around nothing else;
//   - feed (3): Feed.pubMu → Feed.mu → client.mu (feed's doc), none held
//     across I/O or a call into a session;
//   - gitctx (2): its facts cache and its watcher, leaves taken by nobody
//     else;
//   - places (1) and workspace (3): Places.mu (the live places, the
//     radar's queue and the hosts' radars), workspace.Ports.mu (taken
//     before the flock of the machine-wide ports.lock; for a host's ports,
//     held around the programs there that reserve one), workspace.Radar.mu
//     (held while it compares in memory) and the setup command's tail
//     buffer, leaves; git's own locks are git's, and a host's flock is
//     held by a program there.
//
// The groups are nested in one place only, by design: a reply answered
// from a backend's reader (mcpconn's ToolCall.TryReplyNow, called by
// session's replyFromReader) records the turn, under the omu it has
// claimed, before the answer is written, so that the client never reads
// an answer ahead of the state it reports. That commit takes Session.mu,
// then persister.mu (a queued write, never the write itself), and the
// leaves its notes reach (Feed.mu through the Observer; the resources'
// 1-buffered kick), one at a time. So the order is omu → Session.mu →
// persister.mu (→ Feed.mu), never the reverse: a session reaches the
// connection (events, answers, questions) only with none of its locks
// held, the feed calls into sessions with none of its own, and the
// connection calls tools with none of its own. One lock is held across
// I/O, by design: omu, across a write to the client that must not
// overtake the events held before it (a response, a server→client
// request, progress); what a backend's reader calls takes omu only with
// TryLock (see mcpconn's doc). No other lock is held across I/O: codex.mu
// is held neither across a child's close nor across its start (a restart
// swaps the child under it, then closes the old one and starts the new
// one outside it), so agent_status answers during a slow restart.
//
// # Goroutines
//
// Every goroutine the proxy starts has an owner that shutdown joins:
// the followers of the conversation and resourceNotes's (Run), the
// shutdown requests being answered (frames.wait), the lead's pushes
// (leadPush.close, before the bridge closes, so that what they pushed is
// marked read), the notifications passed on to Codex (owned, ended once
// the child is stopped), a restart (codex.Close waits for it), the watch
// of each host's connection and the check of its reverse forwards after
// a turn there (hostSet.close); the other
// packages' own (mcpconn's reader pool and pump, session's jobs and
// persister, the bridge's workers, the feed, the radar) are joined by
// their Close, Stop or Wait, which shutdown calls. The reader of the
// client never waits for the lead's mail: a call that ends a turn
// releases it (mcpconn.Release) before its flush reads the inbox, and
// the flush waits for the push's signal (a push settled, a batch marked
// read), not on a timer.
//
// # Following the conversation
//
// Under Claude Code (Options.ClaudeSessionID), Run also follows the
// conversation when Claude Code moves it to a background session (←, "for
// agents"; handover.go, docs/claude-code-agents-view.md): one goroutine
// reads the client's session record (ccsession) and, once it is parked,
// Run hands the live sessions over to that background session and shuts
// down, as it does when the client is gone (serve reparented); another
// takes up the sessions handed over to this serve's own Claude Code
// session. Both end before the shutdown begins; resourceNotes's goroutine
// ends when Run returns.
//
// # Shutdown
//
// Run ends when the client's stream ends or ctx does, in this order: new
// requests are refused, sessions are summarised and closed (the isolated
// agents' worktrees let go of, not removed: a resume re-enters them), the
// conflict radar's goroutine ends, shutdown requests being answered finish
// (bounded), the mail bridge stops, requests still running are cancelled,
// the sessions' goroutines end, every kind's backend is stopped at once
// within one budget (closeBackends: the Codex child after a restart in
// progress, so that no child it started outlives the proxy, each ACP
// backend's agents, and every host's: the ssh connections are closed
// after them, which stops on each host what this serve's agents left
// there), and the connection's writing ends.
package proxy
