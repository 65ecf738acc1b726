package tools

// Instructions are the server's instructions to the client (the initialize
// and server/discover results): how to lead Codex agents with these tools —
// one identity each, in parallel, mail, approvals, closing, the sessions'
// resources.
const Instructions = "Runs OpenAI Codex agents as named members of an ATM team, many at once over one Codex process.\n\n" +
	"Agents: start one with `codex` {identity, prompt} (one identity per agent; the result carries its agent_id) " +
	"and continue it with `codex-reply` {agent_id, prompt}. Each agent has its own thread and queue: replies to one " +
	"agent run in order, a reply to a busy agent waits for its turn (with steer: true it is added to the running turn " +
	"instead, where the agent can take it: Codex app-server). A turn whose agent starts sub-agents of its own is done " +
	"when they are (or sub_agent_wait_secs passed: the result says so); `agent_status` lists them under sub_agents.\n\n" +
	"Structured answers: give output_schema (a JSON Schema) to `codex`, `codex-reply`, `agent_start` or `agent_reply`; " +
	"structuredContent.output is the answer's JSON, validated (an answer that does not match is an error result).\n\n" +
	"Forks: `agent_fork` {agent_id, identity, prompt?} starts a new agent from another's history (its own thread where " +
	"the agent can fork it, else told its summary or messages: forked_from says which).\n\n" +
	"In parallel: call `codex` for several identities in one turn, or pass `background: true` (the call returns at " +
	"once with status busy) and collect each result with `agent_wait` {agent_id} (the result when the turn ends, or the " +
	"current status after timeout_secs; call it again) or look with `agent_status`. Long turns send progress.\n\n" +
	"Mail: agents send and read team mail (`atm_send`, `atm_read`, `atm_broadcast`) under their identity. Mail that " +
	"arrives for an agent while it is idle becomes its next turn by itself (auto_mail), and is marked read once " +
	"delivered; yours, to a busy agent, goes into its running turn where it can (busy_mail). You read and send as this server's identity with atm_read/atm_send {identity}; `atm_pending_count` " +
	"counts without reading.\n\n" +
	"Approvals: when an agent wants to run a command or apply a patch its sandbox does not allow, Codex asks. A client " +
	"with elicitation gets a form (approve, approve for the session, deny); otherwise the configured approval_fallback " +
	"decides, or the approval waits (status awaiting_approval, listed under pending_approvals by `agent_status`) until " +
	"`agent_respond` {agent_id, answer: approve | approve_for_session | deny | \"deny: reason\"} answers it.\n\n" +
	"End: `agent_close` {agent_id} frees its identity at once and keeps its thread; `codex` {agent_id} later continues " +
	"that same thread (a result whose thread could not be continued says so). `agent_sessions` lists this server's live sessions (`all: true` adds ended ones and other servers'); `agent_list_codex_sessions` finds Codex sessions to adopt (`codex` " +
	"{thread_id}). If Codex itself stops, the errors say how to get it back (`agent_restart_codex`). When the " +
	"operator holds sessions read-only, ask for no other sandbox.\n\n" +
	"Worktrees: with isolation \"worktree\" (on `codex` or `agent_start`) each agent works and commits in a git worktree " +
	"and on a branch of its own, your checkout untouched. When one is done, review its change with `agent_diff` {agent_id} " +
	"(committed and uncommitted; long patches are paged with offset) and send it back with your comments, or bring it into " +
	"your checkout with `agent_merge` {agent_id}: squash by default, refused while the agent works or your checkout has " +
	"uncommitted changes; check (or merge_check) runs your tests at the merged result first; a conflict changes nothing and " +
	"lists the hunks, and on_conflict: \"mail\" tells the agent to bring its branch up to date and resolve it; to: " +
	"\"branch\" only leaves a branch for a pull request. After a merge the other isolated agents are told that their base moved.\n\n" +
	"Resources: every session's summary, last result and agent messages are MCP resources, " +
	"atm://<team>/<agent_id>/summary, .../result and .../transcript (resources/read; in Claude Code the " +
	"ReadMcpResourceTool with this server's name, or an @-mention of one).\n\n" +
	"Other agents: `agent_start` {agent: \"claude\" | \"gemini\" | \"opencode\" | a configured name, identity, prompt} " +
	"runs another coding agent (one that speaks the Agent Client Protocol) as a team member the same way: its own " +
	"team-mail tools, auto_mail, approvals, background and every agent_* tool; continue it with `agent_reply` " +
	"{agent_id, prompt}. Codex-only settings (sandbox, approval-policy, profile, config) are the codex tool's."
