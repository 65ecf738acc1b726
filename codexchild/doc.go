// Package codexchild runs and supervises one Codex child process and speaks
// its protocol (codex mcp-server or codex app-server) behind the seam every
// agent kind shares, [backend.Backend] (package codexchild/backend): start
// a thread, continue it, interrupt a turn, answer its approvals, stream its
// events and report its result. The ACP backend (package
// codexchild/acpbackend) is the seam's other implementation; neither
// imports the other. What only one protocol has is an optional interface of
// the seam, asked of the backend: [Passthrough] (mcp-server's MCP requests
// and notifications, this package's own), backend.Steerer (app-server's
// turn/steer, steer.go), backend.Forker (app-server's thread/fork, fork.go)
// and backend.StructuredOutputter (app-server's outputSchema,
// structured.go); the auto backend has them all and answers ErrUnsupported
// where the protocol it chose has not. What every Codex backend is,
// as the seam asks (its sandbox, its settings, one child restarted as a
// whole, its name), is [Codex], which each embeds; [Options] are Codex's
// own thread parameters, opaque to everyone else, made from Codex's
// [Settings] (options.go). Which thread a turn runs on is the backend's
// business: a thread the child has not loaded is resumed (app-server
// thread/resume); one it cannot continue (mcp-server always, threads.go;
// app-server when Codex has no rollout of it) is replaced by a fresh one
// seeded with TurnRequest.Seed, and backend.Result.Replaced says why.
// TurnRequest.OnThread tells the caller a new thread's id as soon as it
// exists, long before a slow first turn ends.
//
// [NewMCPServer] returns the backend for `codex mcp-server` (Codex 0.104 –
// 0.153.4). It starts the child on first use, does the MCP handshake with the
// proxy's own client info, caches tools/list, and works around the traps of
// the real Codex described in docs/codex-wire.md: cancelled requests are
// never answered (the backend answers its caller itself), approvals must be
// answered with Codex's own {"decision": ...} and never with a JSON-RPC error,
// resources/list and prompts/list are never answered, and after a cancel a
// later result may arrive under the old request id (see the design notes on
// [MCPServer]).
//
// [NewAppServer] returns the backend for `codex app-server` (Codex 0.154
// and later; `codex mcp-server` was removed in 0.154.0). It speaks the
// app-server's dialect (no "jsonrpc" member, thread/start, turn/start ended
// by turn/completed, turn/interrupt, turn/steer, thread/resume of a thread a
// previous process ran, item/*/requestApproval) behind the same interface,
// and answers every other server request itself (see otherRequestAnswer).
//
// A turn tells its caller when its request was written (TurnRequest.OnSent)
// and when the child acknowledged it (TurnRequest.OnAccepted: app-server's
// turn/start response, mcp-server's first event of the turn or its
// result). Only the second proves that Codex read the turn: a child that
// dies in between never saw it, and the mail layer offers such a turn's
// mail again.
//
// A turn's events reach its backend.Handler on the backend's reader
// goroutine, each with its protocol's translation as its Event.Translate
// (the one [Translate] picks by the event's method, chosen when the event
// is read): a Codex event is put in neutral terms only when somebody reads
// it. A Handler that is also
// a backend.Flusher can pass them on in batches: the reader calls Flush
// whenever it has nothing more of the child's output to read.
//
// Both backends embed one request/response core (core.go): the child
// started once on first use, the backend's own request ids and the table of
// calls waiting for an answer, serialised writes to the child's stdin, and
// the failure of every waiting call when the child exits. Each backend adds
// only its routing and its protocol. The core is hand-written rather than
// github.com/sourcegraph/jsonrpc2, measured on the path that matters, the
// child's event stream (BenchmarkEventFraming, a mockcodex turn's
// codex/event lines on the 2-core test machine): jsonrpcframe reads an event
// in about 1 µs with 2 allocations, jsonrpc2's Conn over a plain object
// stream in 23–53 µs with 122 allocations, and its handler model (a response
// goes to the waiting Call, everything else to one Handler) has no place for
// the stale-request-id routing mcp-server needs or the child's exit failing
// the waiting calls with an *ExitError.
//
// [New] picks the backend by Config.Kind; the default, "auto", probes the
// binary at first use (`codex --version`, else the usage line of `codex
// mcp-server --help`) and logs its choice. Until then its Kind is KindAuto:
// Kind never blocks.
//
// Every process this module starts is supervised by one package,
// internal/childproc: the Codex child (core.go), the probes of the auto
// selection (select.go), every ACP agent (package acp) and the tool
// servers the ACP backend's ToolsHTTP runs (package acpbackend). Each runs in a process group
// of its own, through the guard when Config.Guard is set; its stderr is
// drained to the log (terminal escapes stripped; Codex's lines at Codex's
// own level); a graceful stop closes its stdin, then sends SIGTERM to the
// group (exec.Cmd's Cancel) and SIGKILL after a grace (WaitDelay); a write
// to its stdin waits under a deadline only when the pipe is full; nothing
// of its group outlives it. Its death is an *ExitError naming the agent
// kind ("codex child process …", "claude agent process …") whose
// ExitStatus says how it died and, when the backend killed it, why: a
// child that writes 10000 lines in a row on stdout that are not JSON-RPC
// is "stopped: it wrote 10412 lines in a row that are not JSON-RPC on
// stdout, and 10000 is the limit (killed by signal killed)", with the count
// of lines it wrote, in every later call's error and in
// Status().Exit alike. The causes survive: errors.Is finds backend.ErrChildExited
// (acp.ErrAgentExited is the same value), backend.ErrNotJSONRPC or
// backend.ErrStdinBlocked underneath. childproc.Config.Launch is the seam for
// where a child runs (a command on another machine, over `ssh -T`, would
// be started and supervised the same way); nothing uses another place
// yet.
//
// The files: core.go is the request/response core shared by the Codex
// backends;
// mcpserver.go is the mcp-server backend's API and lifecycle, threads.go its
// thread policy, calls.go its requests and replies, router.go its reader and
// routing, turn.go the state of a turn, approval.go the mapping of decisions and approval requests,
// config.go the Config; appserver.go is the app-server backend's API and
// lifecycle, appturn.go its turns, appread.go its reader and routing,
// appapproval.go its approval and server-request answers; denialnote.go
// keeps the notes of denials app-server could not steer into the turn
// (backend.DenialNote) for the thread's next prompt; flush.go is the
// Flusher calls of both readers; select.go is New and the auto selection;
// kinds.go the protocols and Passthrough; options.go what the seam asks
// of a Codex backend (Codex, Settings, Options, Translate);
// notfound.go tells a Codex binary that cannot be run at all
// (backend.ErrNotFound: the exec failed, or the child exited with code 127
// before its handshake, as the guard does when its exec fails) from a
// crash. Translate (options.go) puts each Codex dialect into the seam's
// neutral Activity (activity_mcp.go, activity_app.go, activity_event.go);
// usage_codex.go reads Codex's token usage of both dialects into the
// seam's backend.Usage; toolservers.go makes a thread's ToolServers the
// Codex config's mcp_servers entries; host.go and hosttools.go run Codex
// on another host (Config.Host: the child is `ssh … codex app-server`
// through the host's launcher, package sshhost, and the tool servers stay
// here, reached by url through the host's reverse forward, package
// internal/toolhttp).
//
// # Locks
//
// The module has fifteen mutexes, each documented where it is declared.
// Per package:
//
//   - the Codex backends (core.go): core.mu, the core's state and the
//     embedding backend's own tables (MCPServer's threads, approvals and
//     abandoned calls, a turn's threadID and codexTurn; AppServer's turns,
//     approvals and the fields of an appTurn marked "guarded by
//     AppServer.mu"), never held across I/O (its exitLocked and
//     forgetLocked hooks run under it and only move entries and log);
//     core.wmu, held across one write to the child's stdin, so that a
//     write's blocked hook is its own (the write waits for room at most
//     stdinWriteTimeout); core.mu and wmu are never held together.
//     turn.mu (turn.go) and appTurn.mu (appturn.go), a turn's own text and
//     bookkeeping, held while the reader calls the turn's Handler (Event,
//     Approval) and OnAccepted: held across whatever I/O the Handler does
//     (the proxy writes the events to its client), and before core.mu and
//     wmu (a Handler that answers an approval at once takes both), never
//     after. threadBook.mu (threads.go) and threadNotes.mu (denialnote.go,
//     the app-server's denial notes waiting for a thread's next prompt),
//     leaves. autoBackend.mu (select.go), the probe's outcome, held while
//     asking the chosen backend for its kind: before core.mu.
//   - package acpbackend (the ACP backend): Backend.mu (backend.go),
//     the thread table and the counters, before acpThread.mu
//     (thread.go), a thread's agent, session and running turn, which is
//     held while the turn's Handler is called (events, approvals,
//     flushes): across the Handler's I/O, so a Handler must not call back
//     into the backend (Status takes Backend.mu). Neither is held across
//     a call to the agent.
//   - internal/toolhttp (the tool servers over HTTP of the ACP backend
//     and of Codex on a host): Server.mu, the listener, its forward and
//     the endpoints, held while the listener starts and while the forward
//     is asked of the host's master connection (one `ssh -O forward`);
//     bridge.mu, a tool server's process and pending requests, while that
//     process starts (fork and exec); toolProc.wmu across one write to
//     the tool server. Each is a leaf.
//   - package acp: Client.mu (the pending calls, sessions and turns,
//     permission requests, the exit error, the counters, the event
//     queue's send), never held across I/O, and Client.dmu (the delivered
//     count Sync waits on), never nested with it (acp's doc).
//   - internal/childproc: Process.mu, the stderr tail, the kill's cause
//     and the exit status, a leaf held across nothing.
//
// The backends' locks and package acp's are never nested: the ACP
// backend calls its agents' clients with none of its locks held, and a
// client calls the backend (OnEvent, Asker, OnIdle) with none of its own.
// jsonrpcframe's Pipe and Writer serialise their own reads and writes
// underneath.
//
// # Goroutines
//
// Every goroutine has an owner whose Close waits for it: the Codex
// backends' reader, exit watcher and start (core.go) and their background
// work (core.background: an app-server decline written after its steer);
// the ACP backend's agents stopped after a turn and its interrupts after
// an aborted approval (acpbackend's Backend.background); the http
// listener and tool servers' readers of internal/toolhttp (the Server's
// Close); each agent client's
// reader, exit watcher, event delivery and answers to the agent (package
// acp); each process's supervisor (internal/childproc). Work that would
// start once Close has begun is not started.
//
// Subpackages: backend (the seam every agent kind implements), acpbackend
// (the ACP backend) and acp (the ACP v1 client under it), sshhost (agents
// on other hosts), guard (the process between serve and Codex that lets
// nothing of Codex outlive serve), and internal/childproc (the one
// supervisor of every child process).
//
// What is not production sits in a wing of its own, testing/, as
// containerd keeps runtime/v2/example and x/tools its fake packages: the
// test doubles mockcodex (a mock of the Codex CLI for fault tests),
// mockacp (a mock ACP agent scripted by its prompts) and mockmodel (a
// loopback mock of the Responses API for the real Codex, which speaks the
// Anthropic Messages API too), each a library with a program's Main and a
// thin command in testing/cmd/mockcodex, testing/cmd/mockacp and
// testing/cmd/mockmodel (make build puts them in bin/); and the helpers
// that run the real agents offline: realcodex (the pinned Codex CLIs),
// realacp (the npm-installed ACP agents and their loopback models) and
// sshtest (a private sshd on loopback). No package outside testing/
// imports the wing but tests (TestWingImports).
package codexchild
