// Package mockcodex is a program that stands in for the real Codex CLI in
// tests. It speaks `codex mcp-server` as 0.153.4 does and `codex app-server`
// as 0.171.0 does (docs/codex-wire.md: recorded from 0.169.0, whose wire
// 0.171.0 keeps wherever the mock speaks, plus 0.171.0's method list),
// byte-for-byte where recordings of the real Codex gave the bytes, and its
// "model" answers prompts exactly as package mockmodel answers the real
// Codex, so one test can run against both (the contract tests in package
// codexchild do). TestRecordedAsReal compares recorded.go with the pinned
// real CLIs.
//
// [Main] is the whole program. The command codexchild/testing/cmd/mockcodex (make
// build: bin/mockcodex) only calls it; test binaries run it as a command
// of their own, re-executing themselves under the name "mockcodex" (in
// testscripts, a command registered with testscript.Main), so no test has
// to build it.
//
// Usage:
//
//	mockcodex [-c key=value]... [-m model] mcp-server [--help]
//	mockcodex [-c key=value]... [-m model] app-server [--listen stdio://]
//	mockcodex --version          # codex-cli <MOCKCODEX_VERSION or 0.153.4>
//
// stdout carries NDJSON only; logs go to stderr in Codex's tracing format.
// config.toml in CODEX_HOME is read for top-level model, model_provider,
// approval_policy ("untrusted" is fatal at start, as in 0.153.4) and
// sandbox_mode; -c overrides them.
//
// # Prompt keywords (the model; same texts as mockmodel)
//
//   - plain prompt: "MOCK_REPLY: <prompt trimmed, first 500 runes>", streamed
//     as two deltas (halves).
//   - FAIL500: the model request fails: error event / turn failed with
//     "We're currently experiencing high demand, which may cause temporary
//     errors." (internal_server_error).
//   - FAILSSE: "stream disconnected before completion: mock response.failed".
//   - NOCOMPLETE: "stream disconnected before completion: stream closed
//     before response.completed".
//   - MINIMAL: the message "MOCK_MINIMAL" without deltas.
//   - SLOW or SLOW=n: the model takes n seconds (default 20, at most 120)
//     before answering; a cancel or interrupt ends the wait.
//   - RUN_SHELL [ESCALATE] [CMD=<command to end of line>]: an exec_command
//     call of "touch mock_shell_probe.txt" or the CMD (a literal \n becomes
//     a newline), run with /bin/bash -lc in the thread's cwd. ESCALATE asks
//     for escalation: under approval policy on-request the client is asked
//     (mcp-server: exec_approval_request + elicitation/create; app-server:
//     item/commandExecution/requestApproval); under never the model is told
//     "approval policy is Never; reject command — …". Without ESCALATE the
//     command just runs (app-server "untrusted" asks unless it is a known
//     safe command such as ls or cat). The command really runs only when
//     approved or when no approval is needed. The turn ends with
//     "MOCK_DONE: tool output was: <first 200 runes of the tool output>";
//     the output of a command is formatted as Codex does ("Chunk ID: …\nWall
//     time: …\nProcess exited with code N\nOriginal token count: N\nOutput:\n…").
//     A rejection gives `exec_command failed: CreateProcess { message:
//     "Rejected(\"<reason>\")" }` as the real Codex writes it.
//   - PATCH=<path>: an apply_patch adding <path> (relative to the cwd) with
//     "hello from mockmodel\n". As in Codex, it needs approval only outside
//     the writable roots (cwd, /tmp, $TMPDIR) under workspace-write, always
//     under read-only, never under danger-full-access; then the client gets a
//     patch approval (codex_elicitation "patch-approval" with codex_changes;
//     item/fileChange/requestApproval). The file is written when applied.
//   - ANSWER=<text to end of line>: the message is that text, trimmed.
//   - RECALL: "MOCK_RECALL: <the thread's earlier user texts joined by
//     " | ">" (a resumed or forked thread's history included).
//   - CALL_TOOL=mcp__<server>.<tool> [ARGS=<json to end of line>]: a call of
//     a tool of the thread's own MCP server (see mcp_servers below). The
//     output is "Wall time: X seconds\nOutput:\n<text contents>". Without the
//     mcp__ namespace, or for an unknown server or tool: "unsupported call:
//     <tool>". When the tool needs approval (default_tools_approval_mode is
//     not "approve" and the tool is not readOnlyHint) 0.153.4 emits only an
//     elicitation_request event and the turn hangs forever; app-server sends
//     mcpServer/elicitation/request ({"action":"accept"} runs it).
//
// Mock-only faults, also by prompt keyword:
//
//   - EVENTS=<n>: n more agent message delta events.
//   - SPAWN_SUB or SPAWN_SUB=<n> (app-server; SPAWN_AGENT is the same):
//     the model calls multi_agent_v1.spawn_agent, as mockmodel's does for
//     the real Codex, and the turn starts a sub-agent as Codex 0.171.0
//     does: a collabAgentToolCall item (tool spawnAgent) in progress, a new
//     thread running the task "sub-agent task" (or "SLOW=<n> sub-agent
//     task", or the rest of the line after TASK=) as a turn of its own
//     whose turn/started and turn/completed carry the parent's turn id as
//     rootTurnId, the item completed with the thread pendingInit; the model
//     gets {"agent_id":…,"nickname":"Mock"} and the parent's turn ends at
//     once, before a slow sub-agent's.
//   - STEER_RACE (app-server): a turn/steer during the turn comes too
//     late: the model answers the turn's own prompt at once, turn/completed
//     goes out, and then the steer is refused with "no active turn to
//     steer" (the race of a steer with the end of the turn).
//   - RETRY=<n>: the model is unreachable n times before it answers: n
//     retry notices "Reconnecting... i/n (…)", one every 400 ms (mcp-server
//     stream_error events, a best guess at their shape; app-server error
//     notifications with willRetry true).
//   - CRASH=<code>: exit with that code after the turn's first events;
//     CRASH=SIGKILL|SIGSEGV|SIGTERM|SIGABRT|SIGBUS|SIGINT|SIGQUIT|SIGHUP: die
//     of that signal.
//   - HANG: task_started (turn/started) and then nothing, ever, for this
//     turn; other threads keep working; cancel/interrupt are ignored.
//   - GARBAGE: before the turn's events, write three bad stdout lines: a
//     non-JSON line, a log line with ANSI colour codes and a truncated JSON
//     message.
//   - GARBAGE_FLOOD=<n>: before the turn's events, write n lines that are
//     not JSON on stdout (a child gone mad).
//   - GARBAGE_FLOOD_AFTER=<n>: after the turn's result, write n lines that
//     are not JSON on stdout (a child that goes mad between turns).
//   - STDERR_FLOOD=<bytes>: write that many bytes to stderr from a separate
//     goroutine; a stderr nobody reads blocks only that goroutine (log lines
//     are dropped meanwhile), never stdout.
//
// # Environment
//
//   - CODEX_HOME: rollouts ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local
//     time>-<id>.jsonl, written in both modes in the format of the mocked
//     version), rules/default.rules (approved_execpolicy_amendment), and
//     config.toml. Default ~/.codex.
//   - MOCKCODEX_VERSION: the version reported (--version, serverInfo,
//     rollouts); default 0.153.4, and 0.171.0 for app-server (the tested
//     versions, codexchild/internal/codexversion).
//   - MOCKCODEX_LOG=<file>: append one JSON line {"argv":[…]} at start and
//     {"msg":<message>} for every message received (or {"raw":…} for a line
//     that was not one), each with "pid" and "t".
//   - MOCKCODEX_START_FAIL=<code>: exit with that code before reading stdin
//   - MOCKCODEX_START_HANG=1: read stdin and never answer (a child stuck
//     at start)
//     (initialize is never answered), like a bad config.toml.
//   - MOCKCODEX_START_DELAY_MS=<ms>: wait that long before reading stdin
//     (a child slow to start: its handshake takes that long).
//   - MOCKCODEX_DELAY_MS=<ms>: added latency before each turn's model call.
//   - MOCKCODEX_SLOW_IF=<ms>:<text>: a turn whose input contains text waits
//     that long before its model call (interrupts end the wait): a model
//     slow to answer one kind of prompt, such as a summary
//     (MOCKCODEX_SLOW_IF='3000:Session ending').
//   - MOCKCODEX_TIMING=<file>: keep in that file (created if missing,
//     overwritten in place; a file that cannot be opened is reported on
//     stderr and nothing is kept) two little-endian int64 wall-clock times in Unix
//     nanoseconds: bytes 0–8 when the last request was read, bytes 8–16 just
//     before the last response was written. A benchmark that sends one
//     request at a time can then tell the child's own time from the time
//     spent getting the request to it and the response back.
//   - MOCKCODEX_STALE_LISTENER (mcp-server): after a cancelled or aborted
//     turn, the next codex-reply on the same thread meets the cancelled
//     request's stale listener. "" or "0" (default): no stale listener, all
//     events and the result use the new id. "1": the events alternate
//     between the old and the new id and the result goes to the OLD id (the
//     new request is never answered). "split": the events alternate, the
//     result goes to the new id. Both outcomes were recorded for 0.153.4.
//
// # mcp-server (0.153.4)
//
// NDJSON only, "jsonrpc":"2.0" always; Content-Length header lines, bad JSON
// and batches are logged ("Failed to deserialize JSON-RPC message") and
// dropped. initialize echoes protocolVersion (a second one is -32600
// "initialize called more than once"); tools/list works before it; ping is
// {}; resources/*, prompts/*, logging/setLevel and completion/complete are
// never answered; other methods are -32601 "method not found: X". tools/list
// returns the recorded codex and codex-reply schemas; argument errors are
// isError results with the recorded texts. Threads (UUIDv7) live in memory:
// a new process does not know them. One turn at a time per thread (later
// calls queue), threads run in parallel. A turn emits the recorded codex/event
// sequence with _meta {requestId (same JSON type), threadId} and then the
// result {structuredContent{threadId,content}, content[{type:text,text}]}.
// Approval answers are parsed like 0.153.4: top-level decision "approved",
// "approved_for_session", {"approved_execpolicy_amendment":…} (writes the
// rule), {"denied":{"rejection":R}} (Rejected(R)), "timed_out", "abort"
// (turn_aborted, the tools/call is never answered); anything else is a
// deserialize error on stderr and Rejected("approval request failed"); a
// JSON-RPC error answer hangs the turn forever. notifications/cancelled
// aborts the turn (turn_aborted) and the request is never answered; a late
// elicitation answer is logged "No pending approval found for call_id".
// Server request ids count from 0 per process. elicitation/create is sent
// whether or not the client declared the capability.
//
// A thread's config may hold shell_environment_policy.set.<NAME> =
// "value" (nested or dotted keys): RUN_SHELL's command gets those
// variables in its environment, as the real Codex's commands do.
//
// A thread's config may hold mcp_servers.<name> = {command, args, env,
// env_vars, cwd, default_tools_approval_mode, tools.<t>.approval_mode,
// required, startup_timeout_sec} (nested or dotted keys). Each server is
// started per thread with only HOME, LANG, PATH, SHELL, TERM, env_vars and
// env, in its own process group; initialize/initialized/tools/list are done
// before the first turn (mcp_startup_update and mcp_startup_complete events;
// app-server mcpServer/startupStatus/updated). A required server that fails
// fails the thread ("Failed to start Codex session: error creating thread:
// required MCP servers failed to initialize: <name>: <error>"). Servers get
// stdin EOF and SIGTERM when mockcodex exits.
//
// # app-server (0.171.0)
//
// No "jsonrpc" member is ever sent (the client may omit it); notifications
// carry "emittedAtMs"; errors are -32600 ("Not initialized", "Already
// initialized", "Invalid request: unknown variant `X`, expected one of …"
// with the recorded method list, "Invalid request: missing field
// `threadId`", "thread not found: <id>", "invalid thread id: …", "no rollout
// found for thread id <id>", "no active turn to interrupt"). initialize
// answers {userAgent, codexHome, platformFamily, platformOs} and sends
// configWarning and remoteControl/status/changed. thread/start (approvalPolicy
// untrusted|on-request|never, sandbox, cwd, model, config) answers with the
// recorded thread object and sends thread/started; turn/start answers at
// once after a warning notification, then thread/status/changed, turn/started,
// item/started|completed, item/agentMessage/delta, thread/tokenUsage/updated,
// account/rateLimits/updated and turn/completed (completed, interrupted or
// failed with {message, codexErrorInfo, …}; FAIL500 also sends
// thread/status/changed systemError and error). Approvals are
// item/commandExecution/requestApproval and item/fileChange/requestApproval
// (the diff is in the preceding item/started), answered {"decision":
// "accept"|"acceptForSession"|"decline"|"cancel"|{"acceptWithExecpolicyAmendment":…}};
// serverRequest/resolved follows every answer; a legacy or bad answer or a
// JSON-RPC error fails the item ("approval request failed") and the turn
// continues; "cancel" interrupts the turn. turn/interrupt answers {} and the
// turn completes interrupted (a pending approval is resolved after
// turn/completed). turn/steer adds input to the running turn: the steer
// text gets its own user message and reply, at once when the model was
// still answering (SLOW: the request in flight is dropped, as the real
// Codex 0.171.0 drops it), else after the model's answer.
// thread/fork copies a thread's history (from its rollout, through
// lastTurnId when given; "turn not found: X" otherwise) into a new thread
// with forkedFromId set, its settings from the params or else the
// source's cwd and the defaults; a turn running on the source is forked as
// interrupted. thread/read, thread/list (loaded threads), thread/archive (stops the
// thread's MCP servers), mcpServerStatus/list, model/list, account/read and
// config/read answer minimal results. Threads are persisted: a new process
// can thread/resume a thread from its rollout (history restored; pass the
// config again for MCP servers, as with the real Codex).
//
// # Deliberate differences from the real Codex
//
// Commands run without a sandbox. stdin EOF ends the process at once (real
// Codex sometimes needs SIGTERM when a listener is stuck, and codex
// mcp-server does not exit at EOF while a turn runs); MOCKCODEX_EOF=linger
// makes it ignore EOF, until a signal ends it. The stale
// listener is deterministic (see above). Long texts Codex injects (skills,
// permission instructions) are shortened. The codex-reply argument error
// texts, the denied-patch output ("patch rejected by user") and the shapes of
// mcp_startup_update and mcp_tool_call_* events were not recorded and are
// best guesses. DELTAONLY (a mockmodel keyword) is not supported.
//
// It writes its messages with jsonrpcframe, not sourcegraph/jsonrpc2: it
// must reproduce Codex's bytes (app-server's messages without "jsonrpc",
// its extra members, garbage and half-written lines on demand), which a
// library that encodes Go values for you cannot.
package mockcodex
