// Package mcpconn is the proxy's upstream MCP connection: one client over a
// byte stream (the proxy's stdin and stdout), with no knowledge of what the
// tools do. It frames messages (newline-delimited JSON or Content-Length,
// whichever the client's first message uses), answers initialize, ping,
// logging/setLevel and the list methods itself, hands tools/call to a
// Handler, the resource methods to an optional ResourceHandler (the
// resources capability is declared only with one; resources.go; list
// changes go to legacy clients unsolicited and to modern ones on their
// subscriptions/listen streams, listchanged.go), and
// whatever else to an optional Forwarder, tracks requests for
// cancellation and shutdown (Refuse, CancelAll, Wait), sends server→client
// requests (elicitation) and progress, and writes the events the server
// sends on its own without ever waiting for a slow client.
//
// # Two eras of MCP
//
// Each request is served in the revision it uses (Config.Protocol may pin
// the legacy ones). A legacy client opens with initialize (2024-11-05 to
// 2025-11-25) and is served as before. A request whose _meta declares a
// modern revision (ModernVersions: 2026-07-28, as Claude Code sends first)
// is served on its own: server/discover instead of the handshake, the
// client's capabilities read from that request (ToolCall.Elicitation), a
// resultType and the server's identity on every result, -32601 for the
// methods the revision removed, -32022 for a revision not spoken, and no
// -32002 (SESSION_NOT_FOUND goes as -32602). The Conn never sends a modern
// request's turn a request of its own: a Handler asks with a multi
// round-trip result (ToolResult.Input) and reads the retry's RequestState
// and InputResponses.
//
// # Tasks
//
// A modern request may list the tasks extension (io.modelcontextprotocol/
// tasks, SEP-2663) in its clientCapabilities (ToolCall.Tasks); its
// Handler may then answer with a task instead of a result (ToolResult.Task:
// resultType "task"). A Handler that is a TaskHandler serves tasks/get,
// tasks/update and tasks/cancel, each on a goroutine of its own, and makes
// server/discover list the extension; the Conn renders the Task (the
// finished call's result, or its error in the modern codes) and refuses
// those methods to requests without the extension (-32021), to legacy
// requests and for tasks/result and tasks/list, which the extension does
// not have (-32601). See tasks.go.
//
// # The fast path
//
// A tools/call runs on the goroutine that read it, in read order, so that a
// reply to an idle session reaches its agent's backend without waking
// another thread.
// Before anything in the call may wait, the Handler calls Release(ctx) (or
// ToolCall.Release): another goroutine, from a small pool, takes over the
// reading and the call goes on where it is. Reading never waits for a call.
// The name follows jsonrpc2.Async in the Go MCP SDK.
//
// A call may also be answered from another goroutine the moment its result
// is known, when that costs no waiting (ToolCall.TryReplyNow: nothing
// queued, room in the client's pipe); its Handler then returns ErrAnswered.
// Events are held while a backend's reader has more to read and written in
// one write when it runs dry (Conn.Event with hold, Conn.Flush); a response
// takes the held events along, in front of itself. These three names are
// all the rest of the proxy sees of the mechanism.
//
// # Why not sourcegraph/jsonrpc2 or the MCP Go SDK here
//
// The tools-only server (package tools) runs on sourcegraph/jsonrpc2 over
// jsonrpcframe's ObjectStream; this connection does not. It splices every
// agent's event into the client's stream without decoding it, reads requests
// in order on the goroutine that answers them, passes unknown methods
// through and survives bad lines: jsonrpc2 decodes every message into Go
// values (measured in codexchild, BenchmarkEventFraming: about 23–53 µs and
// 122 allocations per event against about 1 µs and 2 allocations for
// jsonrpcframe), answers from goroutines of its own and closes on the first
// unreadable message; the Go SDK v1.8.0 has no generic notification for
// codex/event, loses read order and cannot pass unknown methods through.
//
// # Locks
//
// Three: Conn.mu (requests in flight, the refusal, the subscriptions/listen
// streams, the reader pool), and
// the outbox's omu then emu. omu orders the writes that take held events
// along (responses, server→client requests, progress, and the pump's
// batches that carry progress), so that no response overtakes events held
// before it and no progress follows its response; it is held across such a
// write, which may wait for the client. emu guards the event queue, the
// held events, the writing claim and the server→client requests waiting
// for answers, and is never held across a write. Conn.mu is taken under
// omu only by TryReplyNow (to free the request's id just before its
// answer), never the other way round, and never with emu. TryReplyNow's
// commit runs under omu too (not emu): the locks its caller takes there
// come after omu, and the caller never takes omu while it holds one of
// them (in the proxy: session's Session.mu, then persister.mu; see
// proxy's doc). The pipe gauge has no lock: only the holder of the
// writing claim uses it. No lock is held while a Handler or Forwarder
// runs.
//
// Only answers to requests (and server→client requests) wait for the
// client. What a backend's reader calls never does: Event and Progress.Send
// write when the pipe has room and queue or drop (and count) otherwise;
// Flush returns at once when nothing is held and hands the held events to
// the pump when omu is busy; TryReplyNow takes omu only with TryLock.
//
// # Goroutines
//
// The reading goroutine (one at a time, handed on by Release), goroutines
// parked in the pool, one per forwarded request (and per tasks/* and
// resource request that reaches its handler), and the event pump, which
// writes queued events while the client is behind. Close stops the pump and
// the pool.
package mcpconn
