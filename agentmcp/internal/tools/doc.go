// Package tools is the proxy's 19 MCP tools — codex, codex-reply, the ATM
// mail tools (atm_send, atm_read, atm_broadcast, atm_pending_count), the
// session tools (agent_sessions, agent_status, agent_close, agent_wait,
// agent_interrupt, agent_respond, agent_list_codex_sessions,
// agent_restart_codex), the tools of other agent kinds (agent_start,
// agent_reply), the review tools (agent_diff, agent_merge) and agent_fork
// (a new session from another's history: fork.go) — and the tools-only server that each agent's
// thread starts, of every kind (ServeTools).
//
// Env is the MCP connection's Handler: it reads a call's arguments, turns
// them into the session domain's requests, and the domain's answers into
// tool results. A codex-reply is queued on its session on the goroutine
// that read it, so replies to one session keep the client's order; every
// other tool releases that goroutine first (mcpconn.Release).
//
// tools.json is the tools/list of both MCP eras, with Claude Code's hints
// in _meta: anthropic/alwaysLoad on the tools a lead needs at once (codex,
// codex-reply, agent_status, agent_wait: no ToolSearch round trip first)
// and anthropic/maxResultSizeChars on the tools with long results
// (agent_status, atm_read). Instructions are the server's instructions to
// the client. The tools-only server lists the ATM tools without the hints.
//
// # Long turns
//
// A codex or codex-reply call waits for its turn, with progress that says
// what the agent does (keepalive.go); background: true returns at once and
// agent_wait collects the result. A 2026-07-28 client that declares the
// MCP tasks extension (the interactive Claude Code) gets a task instead
// (tasks.go): the turn runs as a background turn does, tasks/get tells its
// status and then the call's own result, an approval makes the task
// input_required until tasks/update answers it, and tasks/cancel
// interrupts the turn; agent_status and agent_sessions show a session's
// tasks and their state (taskstatus.go). Env is the connection's
// mcpconn.TaskHandler through the proxy's handler; its tasks are the
// connection's (a stdio connection is one client), with unguessable ids,
// kept an hour after they end.
//
// # Resources
//
// Env is also the connection's mcpconn.ResourceHandler (through the
// proxy's handler): every session this serve knows, live or ended, has
// MCP resources under atm://<team>/<agent_id>/ — summary (its facts, the
// summary the registry keeps, the start of its last result), result (the
// last result, whole) and transcript (the recent agent messages) — so that
// a client can attach them to its conversation (resources.go).
//
// # Policy
//
// Every enumerated argument that tools.json declares is checked before a
// tool runs (enums.go reads the enums from tools.json itself, so a new one
// is covered): a value outside it is INVALID_PARAMS (-32602) naming the
// allowed values; the codex tool's config keys sandbox_mode and
// approval_policy are checked against the enums of sandbox and
// approval-policy. The operator's read-only sandbox (--readonly, or
// sandbox = "read-only" in the configuration or the role preset) is a
// ceiling: a codex call that asks for another sandbox, a profile, or
// config keys other than session.ReadOnlyConfigKeys — on a new session,
// an adoption or a resume — is refused with -32602 naming the policy,
// never clamped silently. The session package enforces it where settings
// become thread parameters (session.Manager.CheckSettings), so no path
// forgets it (docs/configuration.md#policy).
package tools
