// Package mockmodel is a loopback mock of the OpenAI Responses API for running
// the real Codex CLI offline in tests, which also speaks the Anthropic
// Messages API for Claude Code and claude-agent-acp.
//
// A [Server] listens on 127.0.0.1 and answers POST /v1/responses with a
// server-sent-event stream (Codex always sends stream:true), POST
// /v1/messages (see Anthropic Messages below) and GET /v1/models with a
// one-model list. Point a Codex provider at [Server.URL] with
// wire_api = "responses" (see package realcodex for a ready CODEX_HOME),
// and ANTHROPIC_BASE_URL at [Server.URL] without its "/v1".
//
// # Behaviour
//
// The answer is chosen from the last item of the request's input and from the
// last user text (the text of the last user message that is not a context
// block Codex injected, such as <environment_context>, AGENTS.md or
// <turn_aborted>). In order:
//
//  1. [Config.Handler], when it returns a non-nil [Responder].
//  2. [Config.Script]: when the last input item is a message, the longest
//     keyword contained in the last user text picks its Responder.
//  3. The built-in keywords, each only when the last input item is a message:
//     FAIL500 (HTTP 500), MINIMAL (the smallest accepted stream: one
//     output_item.done and response.completed), NOCOMPLETE (a message but no
//     response.completed), DELTAONLY (a delta and response.completed but no
//     output_item.done), FAILSSE (a response.failed event).
//  4. When the last input item is a tool output (function_call_output or
//     custom_tool_call_output): the message "MOCK_DONE: tool output was: X"
//     where X is the first 200 characters of the output (text parts joined
//     by newlines when the output is a list of content items).
//  5. SLOW or SLOW=n: wait n seconds (default 20, at most 120), sending an SSE
//     comment as a keep-alive every half second, then go on with 6–9. The
//     wait ends early when the client disconnects or the server closes.
//     (Measured: app-server 0.169.0 drops the stream at once on
//     turn/interrupt; mcp-server 0.153.4 keeps reading a cancelled turn's
//     stream to its end, so it closes only when the process exits or the
//     wait is over.)
//  6. ANSWER=<text to the end of its line>: the message is that text,
//     trimmed (a JSON answer to a turn with an output schema, say). RECALL:
//     the message "MOCK_RECALL: <the user texts before the last, joined by
//     " | ">": which earlier turns the model was given (a resumed or
//     forked thread's history); see [Request.EarlierUserTexts].
//     SPAWN_SUB or SPAWN_SUB=<n>: a call of Codex's spawn_agent tool
//     (namespace multi_agent_v1 in 0.171.0, or whichever the request
//     offers it in) with the message "sub-agent task", or "SLOW=<n>
//     sub-agent task" so that the sub-agent's own model request takes n
//     seconds; TASK=<text to the end of its line> gives the message
//     instead. Codex starts a sub-agent on a thread of its own, and the
//     parent's turn may end before it ([SubAgentTask], [SpawnSubAgent]).
//     CALL_TOOL=<namespace>.<tool> [ARGS=<json>]: a function_call with
//     "namespace" and "name" (the shape Codex expects for tools of a per-thread
//     MCP server, namespace "mcp__<server>"). ARGS is the rest of its line;
//     default {}. Without a dot the call has no namespace.
//  7. PATCH=<path>: an exec_command function call whose cmd is an
//     "apply_patch <<'EOF'" heredoc adding the file <path> (up to the next
//     white space) with the content [PatchContent]. Codex intercepts the
//     heredoc and applies the patch itself instead of running a shell. Only
//     the path decides whether it asks: under workspace-write and on-request,
//     a path outside the thread's writable roots gives a patch approval
//     (mcp-server: elicitation/create "patch-approval"; app-server:
//     item/fileChange/requestApproval), a path inside (or relative to the
//     cwd) is applied without asking, even with ESCALATE (measured on
//     0.153.4 and 0.169.0).
//  8. RUN_SHELL [ESCALATE] [CMD=<command>]: a function call of the shell tool
//     Codex offers (exec_command, shell_command or shell). The command is
//     "touch mock_shell_probe.txt" unless CMD= gives the rest of the line
//     (a literal \n becomes a newline). ESCALATE adds
//     sandbox_permissions "require_escalated" and a justification, which
//     makes Codex ask for approval under on-request.
//  9. Otherwise the message "MOCK_REPLY: <last user text, trimmed, at most
//     500 characters>".
//
// # Anthropic Messages
//
// POST /v1/messages answers streamed (server-sent events) or whole, as the
// request's stream asks, from its last message and the last user text (the
// text of the last user message that has text of its own; Claude Code's
// <system-reminder> blocks are left out). [Config.Handler] and
// [Config.Script] are for the Responses API only. In order:
//
//  1. When the last message carries tool results: the text "MOCK_DONE: tool
//     output was: X", X the first 200 characters of the results.
//  2. SLOW or SLOW=n: as above (the keep-alives are ping events), then 3–5.
//  3. CALL_TOOL=<tool> [ARGS=<json>]: a tool_use of the tool the request
//     offers by that name, else of the one whose name ends with "__<tool>"
//     (Claude Code names an MCP tool mcp__<server>__<tool>; "<server>.<tool>"
//     reads as "<server>__<tool>"), with those arguments (default {}).
//  4. RUN_SHELL [CMD=<command>]: a tool_use of Bash running the command
//     ("touch mock_shell_probe.txt" by default).
//  5. Otherwise the text "MOCK_REPLY: <last user text without the tagged
//     blocks it starts with (the <session-context> serve puts in front of an
//     agent's prompt), trimmed, at most 500 characters>".
//
// [WriteMessage] writes such an answer for a handler of one's own.
//
// # Recording
//
// Every request is recorded as a [Request] (headers, raw and parsed body, last
// user text, tool names). [Server.Requests] returns them, [Server.WaitRequests]
// waits for them, and [Server.SawInput] tells whether a text appeared anywhere
// in what the model was given (instructions, every message of every role, tool
// calls and tool outputs) in any request.
//
// # The program
//
// [Main] runs the mock as a program, for end-to-end tests written in other
// languages and for humans running the real Codex CLI or claude-agent-acp
// offline. The command codexchild/testing/cmd/mockmodel (make build:
// bin/mockmodel) only calls it; a test binary can run it as a command of
// its own (in testscripts, one registered with testscript.Main).
//
// Usage:
//
//	mockmodel [-addr 127.0.0.1:0] [-log requests.jsonl] [-v] [-watch-stdin=true]
//
// The first line on stdout is the base URL ("http://127.0.0.1:PORT/v1"), to
// use as a Codex provider's base_url, and without its "/v1" as
// ANTHROPIC_BASE_URL; nothing else is written to stdout. The
// mock then serves until SIGTERM or SIGINT, or until stdin reaches EOF (so a
// parent that dies takes it down). Run it in the background of a shell with
// -watch-stdin=false, since such a job's stdin is /dev/null. Diagnostics go
// to stderr; -v adds a line per request.
//
// # Design notes
//
// Each HTTP request runs in its own goroutine (net/http). The server keeps a
// context that Close cancels; every stream selects on it and on the request's
// context, so a SLOW stream ends promptly when either the client hangs up or
// the server closes. Close waits for all handlers to return, so no goroutine
// outlives it.
package mockmodel
