// Package acp is a thin client of the Agent Client Protocol, version 1
// (JSON-RPC 2.0 over the agent's stdin and stdout, one object per line),
// for running coding agents that speak it (claude-agent-acp, gemini --acp,
// opencode acp, copilot --acp, …) as team members, as package codexchild
// runs Codex. It lives in the codexchild module because starting and
// supervising an agent's process is codexchild's concern; it does not
// import codexchild nor the seam (package acpbackend imports it).
//
// [Start] runs the agent in its own process group (agents are process
// trees: Gemini relaunches itself as a child, claude-agent-acp runs Claude
// Code, every agent runs the MCP servers it is given), under the
// supervisor every child of codexchild has (its internal/childproc: stderr
// drained into the log, a graceful stop, nothing of the group outliving
// the agent, how it died and why it was killed in an [ExitError] that
// names the agent's kind, Config.Name), and does initialize (protocol version 1, no fs or terminal
// capabilities: the agents then use their own tools) and, when
// Config.AuthMethod says so, authenticate. [Client.NewSession],
// [Client.LoadSession] and [Client.ResumeSession] open sessions (the last
// two only when the agent advertised them; [Client.Info] has what it
// advertised), passing the session's MCP servers (stdio or HTTP, the
// schema's shapes) and then setting the mode and config options asked for,
// so that an agent whose own default approves by itself (claude-agent-acp's
// "auto") asks instead. [Session.Prompt] is a turn: it folds the session's
// updates into a [TurnResult] (the last agent message and all of them, by
// messageId; thoughts; tool calls, an update of an unknown id creating
// one; usage) and returns the stopReason. [Session.Interrupt] sends
// session/cancel, answers every pending permission request cancelled and
// waits for the turn's end, then kills the process group.
// [Session.Steer] hands the running turn more input, where the agent
// advertises the steering extension (claude-agent-acp's
// _session/steering). [Client.Status]
// says idle, running, awaiting-approval or dead, and how the agent died.
// [Client.Close] closes the sessions the agent can close, then stops it:
// stdin closed, SIGTERM to the group, SIGKILL; nothing of the group
// outlives the agent. With Config.Guard the agent is started through
// codexchild/guard, so that nothing of it outlives the proxy either, however
// the proxy dies.
//
// Every call has a deadline (Config: initialize, the session calls, a
// turn, a cancel): hung prompts and cancels that do not cancel are the
// commonest failure of ACP agents in the field. A cancel is recorded
// client-side ([TurnResult.Cancelled]), since agents answer it with
// cancelled, end_turn or an error, and the turn after it is marked
// ([TurnResult.AfterCancel]): claude-agent-acp 0.101.0 answers that one
// with the interrupted turn's late output (TestClaudeAgentACP).
//
// Events reach Config.OnEvent in order, on a goroutine of the client's:
// the reader never waits for it; when Config.EventBuffer events wait, newer
// ones are dropped and counted. Permission requests go to Config.Asker on a
// goroutine of their own; the answer selects the option whose kind matches
// the [Decision] (option ids differ between agents and are never matched).
//
// # Why not github.com/coder/acp-go-sdk
//
// The client is written over jsonrpcframe (2,500 lines of Go with their
// comments) rather than on coder/acp-go-sdk v0.13.5 (12,000, generated).
// Measured on 2026-11-25 with a scratch program (not committed):
//
//   - Its schema is not the problem: the 40 messages claude-agent-acp
//     0.101.0 sent in TestClaudeAgentACP (updates of 7 kinds, permission
//     requests, prompt answers with usage and _meta) all decoded into its
//     types.
//   - Its back-pressure ends the conversation: notifications go to a queue
//     of 1024 and an overflow closes the connection. 2000 updates with a
//     handler taking 10 ms closed it after 1 was handled. Here the reader
//     never waits and a slow consumer loses events, counted
//     (Status.DroppedEvents), not the agent.
//   - Its reader is a bufio.Scanner capped at 10 MiB: one 11 MiB line (a
//     large tool output) closed the connection. jsonrpcframe skips a message
//     over its limit (64 MiB) and reads on.
//   - An update kind it does not know is decoded as a known one: with a
//     content member as user_message_chunk, without as session_info_update.
//     ACP v2's state_update would be misread; here an unknown kind is
//     EventOther with its name.
//   - Its Client interface has 13 methods (terminals, unstable elicitation
//     and MCP-over-ACP included) and every inbound request runs on a
//     goroutine of its own; Prompt sends session/cancel when its ctx ends
//     but has no deadline or kill. The deadlines, the kill and the
//     process-group supervision, the part that matters most (hung prompts
//     and cancels that do not cancel are the failures users of these
//     agents report most), would be ours anyway.
//
// Writing it here also keeps one framing, one bad-line policy and one
// ordering model for the Codex backends and this one.
//
// # How it plugs in
//
// Package acpbackend (codexchild/acpbackend) is the facade that puts it
// behind the seam every agent kind shares, backend.Backend (Turn,
// Interrupt, Status, Close), on one Client and one
// Session per thread (team member): Turn is Session.Prompt with the
// events mapped to the proxy's neutral Activity (Config.OnEvent; OnIdle
// flushes a batching handler; Client.Sync lets the turn's events reach
// the handler before Turn returns) and the Asker backed by the approval
// bridge; Interrupt is Session.Interrupt; Close is Client.Close; an
// ExitStatus converts to backend.ExitStatus. Resume is LoadSession or
// ResumeSession where the agent offers it (the replay is swallowed), else
// a new session seeded from the proxy's transcript. TurnRequest.OnSent
// tells the mail layer when the prompt was written.
//
// # Design notes
//
// One goroutine reads the agent's stdout (read.go) and never blocks on a
// consumer: an answer closes its call's channel; an update is folded into
// its session's turn under mu and queued for OnEvent without waiting; a
// permission request is registered and handed to the Asker on a new
// goroutine. The reader writes nothing: even what it owes the agent at
// once (a rejection without an Asker, -32601 for fs/* and terminal/*) is
// written by a goroutine of its own. Those goroutines, the Asker's
// included, are the Client's: Close waits for them once the reader has
// ended (the agent's death cancels the Asker's context), as it waits for
// the OnEvent goroutine and the supervisor. A turn
// ends on the reader when its answer is read (call.onEnd), so updates read
// after it belong to no turn, and chunks of an ended turn's messageIds are
// never folded into the next one (claude-agent-acp#551).
//
// Locks: Client.mu guards the pending calls, the sessions and their turns,
// the pending permission requests, the exit error and the counters, and
// the send on the event queue (which never blocks). Nothing is written to
// the agent while mu is held; a call's onResult and onEnd hooks run with
// it held, on the reader. dmu guards the count of delivered events and is
// never held with mu. jsonrpcframe's Writer serialises writes itself; the
// supervisor's lock guards its own state only (codexchild's doc lists
// every lock of the module).
//
// The files: client.go is Start, the calls and Close; read.go the reader
// and routing; session.go the sessions; turn.go the turns and Interrupt;
// steer.go the steering extension;
// approvals.go and permission.go the permission requests and the option
// selection; update.go the session/update parser (the process
// supervision, the start through the guard and the bad-line limiter are
// codexchild's, in internal/childproc); wire.go the ACP types;
// status.go the state; errors.go the errors; config.go the Config.
package acp
