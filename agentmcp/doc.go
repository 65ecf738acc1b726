// Package agentmcp is the atm-agent-mcp program: [Main] runs its command
// line (internal/cli), which resolves the configuration (internal/config)
// and runs the MCP proxy (internal/proxy).
//
// # One backend per agent kind
//
// serve builds the backend of every agent kind from the configuration and
// hands them to the proxy, which gives the sessions a map of them by kind
// (session.Config.Backends): the Codex child of the configured protocol
// (newBackend in serve.go: codexchild.New, started through the guard),
// registered under registry.DefaultKind and supervised by the proxy, and
// one ACP backend (agentBackends in agents.go: acpbackend.New) per
// enabled agent, under the agent's name. Each implements the seam
// codexchild/backend; nothing below this package and the proxy knows which
// protocol a kind speaks.
//
// # When serve cannot be the lead it was asked to be
//
// Claude Code shows a server whose connection failed only as "failed" in
// /mcp (CONNECTION_CLOSED); what serve wrote to stderr goes to a log file
// under ~/.cache/claude-cli-nodejs. Worse, Claude Code 2.1.332 remembers
// the failure of a plugin's server in ~/.claude/mcp-needs-auth-cache.json
// and starts every session of the next 15 minutes, -p or interactive,
// without it, while `claude mcp list` says Connected (doctor's
// claude-cache check reports such an entry). So under Claude Code
// (config.Config.ClaudeCode) serve does not fail its connection where it
// can do better (identity.go):
//
//   - Its identity is held by another serve (another window). A defaulted
//     identity (team-lead) moves to the next free one, team-lead-2 and on,
//     and says so in the server's instructions, the first tool result,
//     agent_status and the log (proxy.Options.Notices). An identity the
//     user set is their choice: serve stands by (proxy.RunStandby), claims
//     nothing, lists the tools and answers every call with the clash and
//     its fix (config.Config.IdentityAdvice), so the user reads it in the
//     conversation. In a terminal or a script, serve still exits with the
//     message.
//   - It runs inside one of serve's own agents. claude-agent-acp 0.101.0
//     runs Claude Code (the Claude Agent SDK's 2.1.318) with its own
//     environment and settingSources user, project and local, so a Claude
//     agent loads the user's plugins and MCP servers from the same
//     ~/.claude, ours included: each Claude agent started a nested serve
//     that failed on the held team-lead, and that cached failure knocked
//     our tools out of the user's next session (TestClaudeCodeAgents,
//     claude-agent, reproduces it with the real programs). serve now gives
//     every process it starts (Codex, every ACP agent: parentServeEnv)
//     config.EnvParentServe; Claude Code passes its whole environment on
//     to its stdio MCP servers (measured with 2.1.318 and 2.1.332: the
//     variable, CLAUDECODE=1 and the session's variables reach the
//     server), so a serve that finds the variable is inside an agent, and
//     stands by with no tools before it reads any configuration (cli's
//     Programs.Nested): its connection succeeds, nothing is claimed,
//     cached or started.
//
// Why not keep the agent's Claude Code from loading us instead: its
// session/new _meta.claudeCode.options reach the SDK. Measured with the
// SDK's Claude Code 2.1.318, settings {"enabledPlugins":
// {"atm-agent-mcp@atm-agent-mcp": false}} drop the plugin (server and
// skill), and --strict-mcp-config drops its server and every other MCP
// server of the user's; settingSources without user would drop all of the
// user's settings. The first needs the marketplace name of each user's
// installation and misses a server registered with `claude mcp add` or in
// .mcp.json; the others take the user's own servers and settings from
// every Claude agent. The variable covers every registration and every
// agent kind that loads the user's MCP configuration, and costs one idle
// process per agent that loads us. To run a serve of its own from an
// agent's shell on purpose, unset the variable (env -u
// ATM_AGENT_MCP_PARENT_SERVE).
package agentmcp
