// Package toolhttp serves an agent's tool servers (backend.ToolServer:
// the per-agent team-mail server, a stdio MCP server run on this machine)
// over MCP's Streamable HTTP on loopback, for agents that take only
// servers by URL: ACP agents that refuse stdio servers (acpbackend's
// ToolsHTTP) and agents on another host, which reach this machine's
// loopback through a reverse forward of the host's ssh connection
// (Config.Host).
//
// A [Server] listens on 127.0.0.1 from its first [Server.Endpoint]; each
// distinct tool server (its name, command line and environment) is one
// endpoint at /mcp with a bearer token of its own (128 random bits), so an
// agent reaches only the tools it was given, as the identity they send
// as. Each endpoint runs its server's command here as a stdio process at
// its first request, and again after it died, and passes POSTed JSON-RPC
// messages through (answers as application/json; no event stream).
//
// Why it is shaped so: the team's mail, registry and approvals stay on
// this machine, so the tool server runs here whatever host the agent runs
// on; only the HTTP requests cross. With a Host, the listener is forwarded
// once to a port on the host's loopback (sshhost.Host.Forward), which the
// host's supervisor makes again after a reconnect (on another port when
// the old one was taken): Endpoint gives the URL on the host as it is now,
// so a thread started after a reconnect gets the right port.
//
// Locks: Server.mu guards the listener, the forward and the endpoints;
// each bridge's mu guards its process and its pending requests. Neither
// is held across I/O, a process start excepted (a bridge's start under
// its own mu, so that concurrent first requests start one process).
package toolhttp
