// Package proxy is the composition root of `atm-agent-mcp serve`: it builds
// the parts and wires them together, and owns their lifetimes.
//
//   - mcpconn: the MCP connection to Claude (framing, read order, the fast
//     path, server→client requests, events);
//   - tools: the 14 tools, over the session manager, the ATM client and the
//     connection;
//   - session: the Codex agent sessions, their turns, persistence and
//     approvals;
//   - codexchild: the Codex child process, behind a Backend;
//   - mailbridge: team mail turned into turns of idle sessions;
//   - gitctx, registry, atmclient: git facts, the session registry and audit
//     log, the ATM inboxes.
//
// The adapters between them live here: eventSink (session.Sink onto the
// connection's events and progress), asker (session.Asker onto elicitation),
// mailHooks and mailTarget (session.Mail and mailbridge.Target), and the
// handler that passes what the connection does not answer itself to the
// Codex child (codexchild.Passthrough).
//
// # Locks
//
// The proxy's own packages have six locks, each documented where it is
// declared: mcpconn's Conn.mu and the outbox's omu → emu; session's
// Manager.mu → Session.mu → persister.mu. The two groups are never nested:
// a session reaches the connection (events, answers, questions) only with
// none of its locks held, and the connection calls tools with none of its
// own. gitctx keeps two more (its facts cache and its watcher), leaf locks
// taken by nobody else. No lock is held across I/O.
//
// # Shutdown
//
// Run ends when the client's stream ends or ctx does, in this order: new
// requests are refused, sessions are summarised and closed, the mail bridge
// stops, requests still running are cancelled, the sessions' goroutines
// end, the Codex child is stopped, and the connection's writing ends.
package proxy
