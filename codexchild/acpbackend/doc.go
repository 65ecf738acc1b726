// Package acpbackend runs coding agents that speak the Agent Client
// Protocol (package acp: claude-agent-acp, gemini --acp, opencode acp, …)
// behind the seam every agent kind shares, backend.Backend (package
// codexchild/backend). It is one implementation of the seam as
// codexchild's Codex backends are another; neither imports the other, and
// serve builds one of these per configured ACP agent kind ([New]).
//
// One agent process and one ACP session run per thread (a team member),
// the session id being the thread id. The backend translates its events
// into the seam's neutral Activity as it reads them (Event.Neutral) and
// the agent's permission requests into Approvals (ApprovalExec,
// ApprovalPatch, ApprovalTool); a thread it has no live agent for is
// reopened with session/load or session/resume, else continued in a new
// session seeded with TurnRequest.Seed. It offers none of the seam's
// optional capabilities: its agents run with the rights of serve (not
// Sandboxed), take no settings of their own (not Configurable), and each
// thread's process is started again at its next turn (no
// WholeRestarter). It is not a Starter either: every thread starts its own
// agent.
//
// The files: backend.go is the API and Config, thread.go a thread's agent,
// session and turns, events.go the translation of events and permission
// requests, usage.go how an agent's turns and usage_update add up into
// the seam's Usage, toolhttp.go the tool servers served over loopback
// HTTP for agents that refuse stdio ones (ToolsHTTP). The lock order is in
// codexchild's doc (Locks).
package acpbackend
