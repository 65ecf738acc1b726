// Package ccmsg writes messages into a Claude Code session through its
// messaging socket, the push path Claude Code 2.1.332 offers every stdio
// MCP server it starts (CLAUDE_CODE_MESSAGING_SOCKET, a Unix socket, and
// CLAUDE_CODE_MESSAGING_TOKEN). Text written there reaches the model's next
// request within the same turn, in `claude -p` and interactive sessions
// alike, as "Another Claude session sent a message while you were working:
// …".
//
// # Wire format
//
// Newline-delimited JSON: first {"type":"auth","token":"<token>"}, then one
// line per message, {"type":"user","message":{"role":"user","content":
// "<text>"}}, with the optional fields from, msg_id and priority (Claude
// Code's default is "next"). The package never sends session_id: a line
// whose session_id does not match the session's is dropped. Claude Code
// does not show from to the model, so a caller puts the sender into the
// content.
//
// # What Claude Code shows
//
// Claude Code frames every line's content for the model as "Another Claude
// session sent a message:", the content, then four lines of warning
// against permission laundering; its terminal shows plain content with
// that frame. Content that is a cross-session envelope (Envelope) is
// shown as a teammate's message instead: "Message from @NAME: <first
// line>", without the frame, which the model still reads (measured with
// Claude Code 2.1.332 in a terminal; no field of a line changes the
// frame). Claude Code escapes a <teammate-message> tag in the content, so
// a line cannot pass as a native teammate's message, nor as its idle
// notification ("Teammate @NAME finished"): that one comes only through
// the inbox a Claude Code lead reads.
//
// # Claude Code's gate
//
// Claude Code passes every line through its gate for peer messages and
// drops, without a word to the writer, what the gate refuses: per sender
// (the from field) 30 lines at once, then one every 2 s; a line equal to
// the sender's previous one within 30 s; any line while 50 wait in its
// queue. The package writes what it is given; the proxy paces its lines
// under the gate (agentmcp/internal/proxy/leadgate.go,
// docs/claude-code-peer-gate.md).
//
// # Design notes
//
// One connection per Send. Claude Code answers nothing on the socket, so a
// writer cannot tell a line it took from one it dropped; and it closes a
// connection that brings no complete line for 30 s. A kept connection could
// therefore take a line into a socket the peer is closing and lose it
// without an error. A fresh connection costs a dial and an auth line:
// 0.15–0.45 ms per Send on a busy 2-core VM (BenchmarkSend), against about
// 15 µs for a line on a kept connection (BenchmarkKeptConnection), both far
// below the 100 ms a push may take; and it makes a refused
// connection (no socket, nobody listening) an error of the Send that met
// it. After the lines, Send half-closes the connection and, unless
// Config.Linger is negative, waits briefly for the peer to close its side,
// so that a reset is an error too. Claude Code 2.1.332 reads the lines of
// a connection its writer has already closed (measured with the real CLI
// in claude -p: a line routed 300 ms after the writer's close, its event
// loop busy with the turn), and does not always close its side within
// 200 ms; the proxy therefore does not linger.
//
// A Client has no lock and no goroutine: each Send uses its own
// connection, so Sends may run at once.
package ccmsg
