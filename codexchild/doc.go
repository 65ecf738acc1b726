// Package codexchild runs and supervises one Codex child process and speaks
// its protocol (codex mcp-server or codex app-server), or coding agents
// that speak the Agent Client Protocol ([NewACP]), behind one interface,
// [Backend]: start a thread, continue it, interrupt a turn, answer its
// approvals, stream its events and report its result. What only one protocol
// has is an optional interface: [Passthrough] (mcp-server's MCP requests
// and notifications) and [Steerer] (app-server's turn/steer). Which thread a
// turn runs on is the backend's business: a thread the child has not loaded
// is resumed (app-server thread/resume, ACP session/load or
// session/resume); one it cannot continue (mcp-server always, threads.go;
// app-server when Codex has no rollout of it; an agent that cannot reopen
// the session) is replaced by a fresh one seeded with TurnRequest.Seed, and
// [Result].Replaced says why. TurnRequest.OnThread tells the caller a new
// thread's id as soon as it exists, long before a slow first turn ends.
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
// A turn's events reach its [Handler] on the backend's reader goroutine. A
// Handler that is also a [Flusher] can pass them on in batches: the reader
// calls Flush whenever it has nothing more of the child's output to read.
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
// [NewACP] returns the backend for coding agents that speak the Agent
// Client Protocol (package acp: claude-agent-acp, gemini --acp, opencode
// acp, …), of Kind KindACP: one agent process and one ACP session per
// thread, the session id being the thread id. It translates its events
// into Activity as it reads them (Event.Neutral) and the agent's
// permission requests into Approvals (ApprovalExec, ApprovalPatch,
// ApprovalTool); a thread it has no live agent for is reopened with
// session/load or session/resume, else continued in a new session seeded
// with TurnRequest.Seed. acp_backend.go is its API and ACPConfig,
// acp_thread.go a thread's agent, session and turns, acp_events.go the
// translation of events and permission requests. It is not a Starter:
// every thread starts its own agent.
//
// The files: child.go supervises a process (process group, stderr drained to
// the log, exit status, graceful stop) and core.go is the request/response
// core, both shared by the backends;
// mcpserver.go is the mcp-server backend's API and lifecycle, threads.go its
// thread policy, calls.go its requests and replies, router.go its reader and
// routing, turn.go the state of a turn, approval.go the mapping of decisions and approval requests,
// config.go the Config; appserver.go is the app-server backend's API and
// lifecycle, appturn.go its turns, appread.go its reader and routing,
// appapproval.go its approval and server-request answers; denialnote.go
// tells an agent why an approval was denied where its protocol has no place
// for the reason (app-server steers the turn, an ACP agent reads it in its
// next prompt); flush.go is the Flusher calls of both readers; select.go is New and the auto selection;
// notfound.go tells a Codex binary that cannot be run at all (ErrNotFound:
// the exec failed, or the child exited with code 127 before its
// handshake, as the guard does when its exec fails) from a crash.
// activity.go is the backend-neutral Activity the session layer reads;
// Event.Activity (activity_event.go) translates each Codex dialect into it
// (activity_mcp.go, activity_app.go); toolservers.go makes a thread's
// ToolServers the Codex config's mcp_servers entries.
//
// Subpackages: acp (the ACP v1 client under NewACP), modelmock (a loopback
// mock of the Responses API for the real Codex), realcodex (test helpers
// that run the real Codex offline), mockcodex (a mock of the Codex CLI for
// fault tests), mockmodel (modelmock as a program) and mockacp (a mock ACP
// agent scripted by its prompts), each of the last three a program's Main
// with a thin command in cmd/mockcodex, cmd/mockmodel and cmd/mockacp.
package codexchild
