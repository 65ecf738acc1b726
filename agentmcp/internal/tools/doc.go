// Package tools is the proxy's 13 MCP tools — codex, codex-reply, the ATM
// mail tools (atm_send, atm_read, atm_broadcast, atm_pending_count) and the
// session tools (agent_sessions, agent_status, agent_close, agent_wait,
// agent_interrupt, agent_respond, agent_list_codex_sessions) — and the
// tools-only server that Codex starts for each thread (ServeTools).
//
// Env is the MCP connection's Handler: it reads a call's arguments, turns
// them into the session domain's requests, and the domain's answers into
// tool results. A codex-reply is queued on its session on the goroutine
// that read it, so replies to one session keep the client's order; every
// other tool releases that goroutine first (mcpconn.Release).
package tools
