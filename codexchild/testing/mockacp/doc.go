// Package mockacp is a program that stands in for a coding agent speaking
// the Agent Client Protocol, version 1 (JSON-RPC over stdio, one object per
// line), in tests: the proxy's ACP backend (package acpbackend) and the
// testscripts run it where they would run claude-agent-acp or gemini
// --acp. It has no model: each prompt is a script, one command a line, and
// it does what the script says, in order.
//
// [Main] is the whole program. The command codexchild/testing/cmd/mockacp (make
// build: bin/mockacp) only calls it; a test binary runs it as a command of
// its own, re-executing itself under the name "mockacp", so no test has to
// build it.
//
// It answers initialize (protocol version 1; loadSession and
// sessionCapabilities.resume and close as the environment says),
// session/new (modes "auto", its default, and "default"; a config option
// "model"), session/load (the session's history replayed as
// user_message_chunk and agent_message_chunk updates before the answer),
// session/resume (no replay), session/close, session/set_mode,
// session/set_config_option, session/prompt and session/cancel, and, with
// MOCKACP_STEERING=1, the steering extension _session/steering (input for
// the running turn, which says it as "steered: TEXT" after the command it
// came during). Anything else is -32601.
//
// # The script of a prompt
//
// Lines that are not commands are ignored (a first prompt carries the
// proxy's instructions in front of the script).
//
//	say TEXT          an agent message (two agent_message_chunk, one
//	                  messageId)
//	think TEXT        an agent_thought_chunk
//	echo              say the whole prompt text back, as one message
//	status            say "mode=M model=X cwd=DIR mcp=NAME,NAME"
//	run COMMAND       run COMMAND with sh -c in the session's cwd, with the
//	                  agent's environment (a coding agent's shell tool, as
//	                  a tool_call of kind execute), then say its output
//	                  (stdout and stderr, trimmed) or "run failed: …"
//	tool ID TITLE     tool_call (kind execute, pending), then
//	                  tool_call_update (completed)
//	update-only ID    a tool_call_update of a call never announced (as
//	                  Gemini does for MCP tools)
//	ask ID [KIND [TITLE]]
//	                  session/request_permission for tool call ID (kind
//	                  execute by default, title "run ID"; an execute call's
//	                  rawInput.command is the title), in mode "default"
//	                  only (mode "auto" allows by itself and says "ran ID
//	                  without asking"); then says "selected OPTIONID" or
//	                  "cancelled"
//	mcp SERVER TOOL JSONARGS
//	                  call a tool of an MCP server given at session/new or
//	                  load: a stdio server is started on first use (and kept
//	                  for the session, stopped when the agent exits), an
//	                  http one is POSTed to with its headers; initialized,
//	                  and sent tools/call; reported as a
//	                  tool_call (kind other, title "SERVER.TOOL"), then says
//	                  the tool's text result ("mcp error: …" when it fails)
//	call METHOD       a request of the agent to the client (fs/read_text_file,
//	                  …); says the error it got
//	plan              a plan update
//	usage USED SIZE [AMOUNT CURRENCY]
//	                  a usage_update (context fill; with the session's
//	                  cost so far)
//	tokens IN OUT [CACHED]
//	                  the prompt's answer carries usage {inputTokens: IN,
//	                  outputTokens: OUT, cachedReadTokens: CACHED,
//	                  totalTokens: IN+OUT} (the session-usage RFD)
//	sleep MS          wait MS milliseconds (a cancel ends the wait and the
//	                  turn)
//	wait              wait for session/cancel, then end the turn as a cancel
//	                  does
//	hang              never answer this prompt, whatever comes (cancel
//	                  included)
//	crash CODE        write a line to stderr and exit with CODE
//	garbage N         N lines on stdout that are not JSON-RPC
//	late TEXT         after the prompt's answer, another chunk of the turn's
//	                  last message
//	spawn PIDFILE     start a process that ignores SIGTERM and the end of
//	                  stdin (as Gemini's relaunched child), write its pid
//	stop REASON       answer with this stopReason (default end_turn)
//
// # Environment
//
//	MOCKACP_STATE=DIR      keep every session's transcript (its prompts and
//	                       the agent's messages) in DIR/SESSIONID.json, so
//	                       that a new process can load or resume it; without
//	                       it, load and resume are not advertised
//	MOCKACP_LOAD=off|fail  with MOCKACP_STATE: do not advertise loadSession;
//	                       or advertise it and answer every session/load
//	                       with an error (a capability that lies)
//	MOCKACP_RESUME=off|fail the same for sessionCapabilities.resume
//	MOCKACP_ON_CANCEL=X    answer a cancelled turn with stopReason X
//	                       (cancelled by default), "error" for a JSON-RPC
//	                       error, "ignore" not at all (a cancel that does
//	                       not cancel)
//	MOCKACP_OPTIONS=JSON   the permission options offered (default:
//	                       allow-once, allow-always and reject, as
//	                       claude-agent-acp)
//	MOCKACP_NO_MSGID=1     send no messageId
//	MOCKACP_HANG_INIT=1    never answer initialize
//	MOCKACP_VERSION=N      answer initialize with protocol version N
//	MOCKACP_GARBAGE=N      write N lines that are not JSON-RPC on stdout at
//	                       start
//	MOCKACP_LOG=FILE       append every message read and written to FILE
//	MOCKACP_STEERING=1     advertise the steering extension
//	                       (_meta.steering.supported of the initialize
//	                       result) and take _session/steering
//	MOCKACP_MCP=http-only  advertise mcpCapabilities.http and refuse a
//	                       session given a stdio MCP server, as GitHub
//	                       Copilot CLI does
//
// stdout carries JSON-RPC only (but for the garbage asked for); diagnostics
// go to stderr.
package mockacp
